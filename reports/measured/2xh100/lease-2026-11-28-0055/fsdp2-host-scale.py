"""Stop 46 experiment (not adopted): the fsdp2 host floor row of each 2 x H100 lease's calibration scaled by
the calibration model's own two-rank FSDP2 host time over the one-rank line at its depth, then
`dmuon-sim --validate` on the lease's unseen FSDP2 reports, before -> after. Leases without host times in
their FSDP2 reports are left out. Run from the repository root after building dmuon-sim:
    /usr/bin/python3 reports/measured/2xh100/lease-2026-11-28-0055/fsdp2-host-scale.py > .../fsdp2-host-scale.txt
"""
import json, re, subprocess, sys, os, tempfile
ROOT='.'; SIM='build/harness/dmuon-sim'
# (label, calibration, fsdp2 folder, file pattern, machine suffix)
L=[('2xh100 00:55', 'scenarios/calibration/h100-sxm-x2.yaml','reports/measured/2xh100/lease-2026-11-28-0055/fsdp2','{m}-torch-2xh100.json','2xh100'),
   ('2xh100 16:38', 'reports/measured/2xh100/lease-2026-11-27-1638/calibrate/h100-sxm-x2.yaml','reports/measured/2xh100/lease-2026-11-27-1638/fsdp2','{m}-torch-2xh100.json','2xh100'),
   ('2xh100 00:42', 'reports/measured/2xh100/lease-2026-11-27-0042/calibrate/h100-sxm-x2.yaml','reports/measured/2xh100/lease-2026-11-27-0042/fsdp2','{m}-torch-2xh100.json','2xh100'),
]
models={'2xh100':['qwen2.5-1.5b','llama3.2-3b'],'2xh200':['qwen2.5-1.5b','llama3.2-3b','llama3-8b']}
def line_at(cal_text, layers):
    m=re.search(r'mode: fsdp2.*?per_layer_s: ([0-9.e-]+), per_step_s: ([-0-9.e]+)', cal_text)
    return float(m.group(1))*layers+float(m.group(2)), float(m.group(1)), float(m.group(2))
def validate(meas, scen, cal):
    out=subprocess.run([SIM,'--validate',meas,'--scenario',scen,'--calibration',cal],capture_output=True,text=True).stdout
    for l in out.splitlines():
        if 'FSDP2' in l: return l.split()[-1]
for label,cal,folder,pat,mach in L:
    text=open(os.path.join(ROOT,cal)).read()
    ref=json.load(open(os.path.join(ROOT,folder,pat.format(m='qwen2.5-3b'))))
    line,pl,ps=line_at(text, ref['num_layers'])
    f=ref['host_fwd_bwd_seconds_median']/line
    with tempfile.NamedTemporaryFile('w',suffix='.yaml',delete=False) as t:  # removed below
        t.write(re.sub(r'(mode: fsdp2.*?per_layer_s: )([0-9.e-]+)(, per_step_s: )([-0-9.e]+)', lambda m: f'{m.group(1)}{float(m.group(2))*f}{m.group(3)}{float(m.group(4))*f}', text, count=1, flags=re.S))
    res=[]
    for m in models[mach]:
        meas=os.path.join(folder,pat.format(m=m)); scen=f'scenarios/validation/{m}-torch-{mach}.yaml'
        res.append(f'{m}: {validate(meas,scen,cal)} -> {validate(meas,scen,t.name)}')
    os.unlink(t.name)
    print(f'{label}: factor {f:.3f} (host {1e3*ref["host_fwd_bwd_seconds_median"]:.1f} / line {1e3*line:.1f}); '+'; '.join(res))
