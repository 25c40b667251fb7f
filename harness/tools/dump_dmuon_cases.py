#!/usr/bin/env python3
"""Dump golden cases from DMuon's own code (X-Square-Robot/dmuon): its Newton-Schulz and its Muon step.

    python3 harness/tools/dump_dmuon_cases.py OUTDIR --dmuon-src third_party_peers/dmuon [--seed N]
    torchrun --nproc-per-node 2 harness/tools/dump_dmuon_cases.py OUTDIR --dmuon-src ... --muon-only

Writes OUTDIR/manifest.json (format "dmuon-golden-1", read by harness/verify/golden.cpp) and the
float32 C-order .npy files it names. DMuon is imported from --dmuon-src at run time (a checkout of
the repository; nothing of it is copied into this project). Needs a CUDA GPU, PyTorch >= 2.9 and
numpy.

- ns: dmuon.optim.newton_schulz.gram_newton_schulz (Gram NS, its defaults: Polar Express / 1.05,
  restart before iteration 2; deterministic=True, i.e. the cuBLAS/addmm path, the one DMuon takes
  wherever its CuteDSL SYRK kernel is not installed) and direct_newton_schulz, on wide, tall,
  square and tiny shapes, for float32 and bfloat16 inputs (DMuon computes in fp16 either way and
  returns the input's dtype; a bf16 case says "output_dtype": "bf16"). Each case is also run on
  the CPU (same function, fp16 GEMMs with fp32 accumulation in another order): where DMuon's own
  two results differ by more than NS_REL the case is chaotic in fp16 and its tolerance says so
  (see ns_tolerance).
- muon: dmuon.Muon on one dedicated parameter (Linear weight) of a one-layer model, 3 steps,
  weights after each step and the momentum buffer. The gradient is injected exactly: input I_n
  and loss sum(y * G^T) make dW = G. Under torchrun every rank feeds the same data, so the
  averaged gradient is G again, and the owner rank's weights are broadcast to rank 0, which
  writes the files.
"""

import argparse
import importlib
import json
import math
import os
import sys
import traceback

import provenance  # harness/tools/provenance.py, beside this script

GENERATOR = "harness/tools/dump_dmuon_cases.py"
OPT_STEPS = 3

# --- tolerances: "rel" is ||out - expected||_F / ||expected||_F ---------------------------------
# ns: fp16 storage, unit roundoff u = 2^-11 = 4.9e-4. A faithful reference rounds at the same
#   points as DMuon but accumulates in another order, so a few elements a product round the other
#   way (one ulp, ~u) and these differences pass through the remaining iterations, whose
#   polynomials have derivative <= ~1 near the converged singular values. About 10 stored
#   products in all give an expected difference of order u * sqrt(10) ~ 1.5e-3; 5e-3 (the issue's
#   0.5%) is 3x that. A rounding form that differs (round after every separate op in place of a
#   fused addmm epilogue, a*I with a rounded to fp16 or not, Q Z in place of Z Q) moves results by
#   more on the shapes where it matters; the report lists the measured numbers.
NS_REL = 5e-3
# A case whose own CPU and GPU results differ by more than NS_REL is not reproducible to NS_REL by
# anyone: its rel becomes this many times that self-difference (and the C++ side also requires our
# error against exact double NS to be no larger than DMuon's own, the criterion used for torch).
SELF_DIFF_HEADROOM = 2.0
SIZE_BUDGET = 600_000  # bytes of .npy in all: tests/golden/dmuon/ is committed
MOMENTUM_REL = 1e-6  # sum form mu*buf + g in fp32, 2 roundings a step, 3 steps (see dump_torch_cases)


def fail(message):
    raise SystemExit(f"dump_dmuon_cases: {message}")


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", help="directory for manifest.json and the .npy files (created if missing)")
    ap.add_argument("--dmuon-src", required=True, help="checkout of X-Square-Robot/dmuon (the folder holding dmuon/)")
    ap.add_argument("--dmuon-commit", default="", help="its commit, recorded in the manifest (default: DMUON_SRC.commit)")
    ap.add_argument("--seed", type=int, default=20261123)
    ap.add_argument("--muon-only", action="store_true", help="skip the ns cases (e.g. under torchrun)")
    ap.add_argument("--cpu-copies", default="", help="also save DMuon's CPU result of each ns case here (<name>_Ycpu.npy)")
    return ap.parse_args(argv)


def import_dmuon(src):
    if not os.path.isdir(os.path.join(src, "dmuon")):
        fail(f"--dmuon-src {src}: no dmuon/ package folder there")
    sys.path.insert(0, os.path.abspath(src))
    try:
        import dmuon
        # the module itself: dmuon.optim re-exports a function of the same name
        ns_mod = importlib.import_module("dmuon.optim.newton_schulz")
    except Exception as e:  # its import pulls in torch.distributed and FSDP2 patches
        fail(f"importing DMuon from {src} failed: {type(e).__name__}: {e}")
    for name in ("gram_newton_schulz", "direct_newton_schulz", "POLAR_EXPRESS_COEFFICIENTS",
                 "DEFAULT_RESTART_ITERATIONS"):
        if not hasattr(ns_mod, name):
            fail(f"dmuon.optim.newton_schulz has no {name}; its API changed, update this script")
    return dmuon, ns_mod


def check_defaults(ns_mod, preset_schedule):
    """The manifest names our preset's schedule; fail if DMuon's defaults moved away from it."""
    theirs = [tuple(float(v) for v in abc) for abc in ns_mod.POLAR_EXPRESS_COEFFICIENTS]
    if len(theirs) != len(preset_schedule) or any(
            abs(x - y) > 1e-12 * abs(y) for t, p in zip(theirs, preset_schedule) for x, y in zip(t, p)):
        fail(f"DMuon's POLAR_EXPRESS_COEFFICIENTS {theirs} are not polar-express-1.05")
    if list(ns_mod.DEFAULT_RESTART_ITERATIONS) != [2]:
        fail(f"DMuon's DEFAULT_RESTART_ITERATIONS is {ns_mod.DEFAULT_RESTART_ITERATIONS}, not [2]")


def polar_express_105():
    raw = [(8.28721201814563, -23.595886519098837, 17.300387312530933),
           (4.107059111542203, -2.9478499167379106, 0.5448431082926601),
           (3.9486908534822946, -2.908902115962949, 0.5518191394370137),
           (3.3184196573706015, -2.488488024314874, 0.51004894012372),
           (2.300652019954817, -1.6689039845747493, 0.4188073119525673)]
    return [(a / 1.05, b / 1.05 ** 3, c / 1.05 ** 5) for a, b, c in raw]


def ns_section(variant):
    base = {"coefficients": "polar-express", "steps": 5, "eps": 1e-7, "norm": "add",
            "dtype": "fp16", "normalize_dtype": "fp32"}
    if variant == "gram":
        return {"variant": "gram", "restarts": [2], **base}
    # direct_newton_schulz: B = b*A + c*A@A and X = a*X + B@X as separate fp16 ops.
    return {"variant": "standard", "restarts": [], "products": "separate", **base}


def ns_tolerance(tools, self_diff, square):
    """Squares are where fp16 Gram NS loses the small singular values (R = X X^T squares the
    condition number): they also check our error against exact double is not above DMuon's."""
    if self_diff <= NS_REL:
        return {"rel": NS_REL, **({"error_vs_double_not_above_expected": True} if square else {})}
    return {"rel": tools.round_up_2sig(SELF_DIFF_HEADROOM * self_diff), "error_vs_double_not_above_expected": True}


def ns_case(tools, torch, w, gen, device, fn, fn_label, variant, rows, cols, dtype, flags, cpu_copies):
    tag = "bf16" if dtype == torch.bfloat16 else "f32"
    name = f"{variant}_{rows}x{cols}_{tag}"
    x = tools.randn(gen, rows, cols).to(dtype)
    y = fn(x.to(device))
    if y.dtype != dtype or tuple(y.shape) != (rows, cols) or not torch.isfinite(y).all():
        fail(f"{name}: DMuon returned {y.dtype} {tuple(y.shape)} (finite: {bool(torch.isfinite(y).all())})")
    y64 = y.to("cpu", torch.float64)
    try:  # same code, CPU fp16 GEMMs: DMuon's own spread on this input between two faithful runs
        y_cpu = fn(x.clone())
        self_diff = float((y64 - y_cpu.to(torch.float64)).norm() / y64.norm())
        cpu_note = f"DMuon's own CPU result differs from it by rel {self_diff:.3g}"
    except Exception as e:  # a torch without CPU fp16 GEMMs: no spread measured, the plain tolerance
        y_cpu, self_diff, cpu_note = None, 0.0, f"DMuon on the CPU failed ({type(e).__name__}: {e})"
    if cpu_copies and y_cpu is not None:
        cpu_copies.save(f"{name}_Ycpu", y_cpu)
        m = torch.backends.cuda.matmul
        saved = m.allow_fp16_reduced_precision_reduction
        m.allow_fp16_reduced_precision_reduction = not saved
        y_flip = fn(x.to(device)).to("cpu", torch.float64)
        m.allow_fp16_reduced_precision_reduction = saved
        print(f"{name}: allow_fp16_reduced_precision_reduction={not saved} moves it by rel "
              f"{float((y_flip - y64).norm() / y64.norm()):.3g}", file=sys.stderr)
    case = {
        "name": name,
        "kind": "ns",
        "ns": ns_section(variant),
        "inputs": {"X": w.save(f"{name}_X", x)},
        "expected": {"Y": w.save(f"{name}_Y", y)},
        "tolerance": ns_tolerance(tools, self_diff, rows == cols and rows > 1),
        "notes": (f"{fn_label} on {device.type}, X ~ N(0,1) as {x.dtype}; Y is DMuon's {y.dtype} result widened to "
                  f"float32; {cpu_note}; "
                  f"{'transposed inside (tall)' if rows > cols else 'no transpose (wide or square)'}; {flags}"),
    }
    if dtype == torch.bfloat16:
        case["output_dtype"] = "bf16"
    print(f"{name}: {cpu_note}", file=sys.stderr)
    return case


def ns_cases(tools, torch, ns_mod, w, gen, device, flags, cpu_copies):
    gram = lambda g: ns_mod.gram_newton_schulz(g, deterministic=True)
    direct = ns_mod.direct_newton_schulz
    f32, bf16 = torch.float32, torch.bfloat16
    plan = [("gram", gram, "gram_newton_schulz(X, deterministic=True)", [
                ((32, 64), f32), ((64, 32), f32), ((64, 64), f32), ((128, 128), f32), ((33, 47), f32),
                ((1, 40), f32), ((8, 8), f32), ((32, 64), bf16), ((64, 64), bf16)]),
            ("direct", direct, "direct_newton_schulz(X)", [
                ((32, 64), f32), ((64, 32), f32), ((64, 64), f32), ((1, 40), f32), ((32, 64), bf16)])]
    cases = []
    for variant, fn, label, shapes in plan:
        for (rows, cols), dtype in shapes:
            cases.append(ns_case(tools, torch, w, gen, device, fn, label, variant, rows, cols, dtype, flags,
                                 cpu_copies))
    return cases


def init_dist(torch):
    import torch.distributed as dist
    if "RANK" not in os.environ:  # one process without torchrun: a world of one
        os.environ.update({"RANK": "0", "WORLD_SIZE": "1", "LOCAL_RANK": "0",
                           "MASTER_ADDR": "127.0.0.1", "MASTER_PORT": os.environ.get("MASTER_PORT", "29517")})
    local = int(os.environ.get("LOCAL_RANK", "0"))
    torch.cuda.set_device(local)
    dist.init_process_group("nccl")
    return dist, dist.get_rank(), dist.get_world_size()


def muon_case(tools, torch, dmuon, dist, w, gen, name, rows, cols, *, lr=0.02, weight_decay=0.1,
              momentum=0.95, nesterov=True):
    import torch.nn as nn
    from torch.distributed.device_mesh import init_device_mesh
    rank, world = dist.get_rank(), dist.get_world_size()
    w0 = tools.randn(gen, rows, cols)  # every rank draws the same numbers from the same seed
    grads = [tools.randn(gen, rows, cols) for _ in range(OPT_STEPS)]

    class Block(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Linear(cols, rows, bias=False)

        def forward(self, x):
            return self.proj(x)

    class OneLayer(nn.Module):  # DMuon hooks attach to layers.N
        def __init__(self):
            super().__init__()
            self.layers = nn.ModuleList([Block()])

        def forward(self, x):
            return self.layers[0](x)

    dev = torch.device("cuda", torch.cuda.current_device())
    model = OneLayer().to(dev)
    with torch.no_grad():
        model.layers[0].proj.weight.copy_(w0.to(dev))
    mesh = init_device_mesh("cuda", (world,))
    dmuon.dedicate_params(model, mesh, predicate=lambda n, p: n.endswith("proj.weight"))
    ns = dmuon.NewtonSchulz("gram", kernel="cublas")
    opt = dmuon.Muon(model, lr=lr, momentum=momentum, weight_decay=weight_decay, nesterov=nesterov,
                     ns_backend=ns, replicate_async=False, first_step_progress_log=False)
    dps = dmuon.get_dedicated_params(model)
    if len(dps) != 1:
        fail(f"{name}: expected one dedicated parameter, DMuon made {len(dps)}")
    dp = dps[0]
    # Requires grad as a real layer's input does, so DMuon's post-backward runs on its usual path.
    eye = torch.eye(cols, device=dev).requires_grad_(True)
    weights = []
    for g in grads:
        opt.zero_grad()
        loss = (model(eye) * g.to(dev).T).sum()  # d loss / d W = G exactly (identity input, fp32)
        loss.backward()
        opt.step()
        torch.cuda.synchronize()
        buf = torch.empty(rows, cols, device=dev)
        if dp.is_owner:
            buf.copy_(dp._owned_data.view(rows, cols))
        dist.broadcast(buf, src=dp._owner_global_rank)
        weights.append(buf.cpu())
    mom = torch.empty(rows, cols, device=dev)
    if dp.is_owner:
        state = opt.state.get(id(dp), {})
        if "momentum_buffer" not in state:
            fail(f"{name}: DMuon's state has no momentum_buffer (keys {sorted(state)})")
        mom.copy_(state["momentum_buffer"].view(rows, cols))
    dist.broadcast(mom, src=dp._owner_global_rank)
    mom = mom.cpu()
    check_sum_momentum(tools, name, grads, mom, momentum)

    # weights' rel, reasoned in dump_torch_cases.py: NS_REL x the summed update norms / ||W_t||.
    prev = w0.double()
    update_sum, rel = 0.0, tools.WEIGHT_REL_FLOOR
    for wt in weights:
        cur = wt.double()
        update_sum += float((prev * (1.0 - lr * weight_decay) - cur).norm())
        rel = max(rel, tools.WEIGHT_REL_HEADROOM * NS_REL * update_sum / float(cur.norm()))
        prev = cur
    if rank != 0:
        return None
    return {
        "name": name,
        "kind": "muon",
        "optimizer": {"preset": "dmuon", "lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                      "nesterov": nesterov},
        "inputs": {"W0": w.save(f"{name}_W0", w0),
                   "grads": [w.save(f"{name}_g{k + 1}", g) for k, g in enumerate(grads)]},
        "expected": {"weights": [w.save(f"{name}_W{k + 1}", x) for k, x in enumerate(weights)],
                     "momentum": w.save(f"{name}_momentum", mom)},
        "tolerance": {"rel": tools.round_up_2sig(rel), "momentum_rel": MOMENTUM_REL},
        "notes": (f"dmuon.Muon(lr={lr}, momentum={momentum}, weight_decay={weight_decay}, nesterov={nesterov}, "
                  f"ns_backend=NewtonSchulz('gram', kernel='cublas'), replicate_async=False), {OPT_STEPS} steps on "
                  f"one dedicated {rows}x{cols} float32 Linear weight, world size {world} (owner rank "
                  f"{dp._owner_global_rank}); W0, g ~ N(0,1); gradient injected as d/dW sum((I W^T) * G^T) = G"),
    }


def check_sum_momentum(tools, name, grads, buf, mu):
    total = None
    for g in grads:
        total = g.double() if total is None else mu * total + g.double()
    if float((buf.double() - total).norm()) > 1e-5 * float(total.norm()):
        fail(f"{name}: DMuon's momentum buffer is not mu*buf + g of the injected gradients "
             f"(the gradient did not arrive as G, or the momentum form changed)")


def main(argv=None):
    args = parse_args(argv)
    import numpy  # noqa: F401  (the writer needs it; fail here, not midway)
    import torch
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import dump_torch_cases as tools  # the format's .npy writer, randn and rounding helpers
    if not torch.cuda.is_available():
        fail("needs a CUDA GPU (DMuon's Muon step is CUDA-only)")
    dmuon, ns_mod = import_dmuon(args.dmuon_src)
    check_defaults(ns_mod, polar_express_105())
    commit = args.dmuon_commit
    if not commit and os.path.exists(args.dmuon_src.rstrip("/") + ".commit"):
        commit = open(args.dmuon_src.rstrip("/") + ".commit", encoding="utf-8").read().strip()

    dist, rank, world = init_dist(torch)
    device = torch.device("cuda", torch.cuda.current_device())
    m = torch.backends.cuda.matmul
    flags = (f"allow_fp16_reduced_precision_reduction={m.allow_fp16_reduced_precision_reduction}, "
             f"allow_tf32={m.allow_tf32}, dmuon HAS_SYRK={ns_mod._HAS_SYRK}")
    if rank == 0:
        os.makedirs(args.outdir, exist_ok=True)
    w = tools.Writer(args.outdir)
    gen = torch.Generator(device="cpu").manual_seed(args.seed)

    cases = []
    if not args.muon_only and rank == 0:
        copies = None
        if args.cpu_copies:
            os.makedirs(args.cpu_copies, exist_ok=True)
            copies = tools.Writer(args.cpu_copies)
        cases += ns_cases(tools, torch, ns_mod, w, gen, device, flags, copies)
    gen.manual_seed(args.seed + 1)  # the muon inputs do not depend on whether ns ran
    for name, rows, cols, kw in [(f"muon_w{world}_32x48", 32, 48, {}),
                                 (f"muon_w{world}_tall_48x24", 48, 24, {}),
                                 (f"muon_w{world}_no_nesterov_24x40", 24, 40, {"nesterov": False})]:
        try:
            case = muon_case(tools, torch, dmuon, dist, w, gen, name, rows, cols, **kw)
        except Exception:  # one process: keep the other cases; under torchrun a rank must not go on alone
            if world > 1:
                raise
            traceback.print_exc()
            print(f"{name}: FAILED, left out of the manifest", file=sys.stderr)
            continue
        if case:
            cases.append(case)
    if rank == 0:
        manifest = {
            "format": "dmuon-golden-1",
            "generator": GENERATOR,
            "torch_version": torch.__version__,
            "device": f"{torch.cuda.get_device_name(device)} x {world}",
            **provenance.stamp(),
            "seed": args.seed,
            "cases": cases,
            "notes": f"X-Square-Robot/dmuon at {commit or 'unknown commit'}, imported from {args.dmuon_src}; {flags}",
        }
        path = os.path.join(args.outdir, "manifest.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
        print(f"wrote {path}: {len(cases)} cases, {w.total} bytes of .npy", file=sys.stderr)
        if w.total > SIZE_BUDGET:
            fail(f".npy files total {w.total} bytes, over the {SIZE_BUDGET}-byte budget (committed to tests/golden/)")
    dist.destroy_process_group()
    return 0


if __name__ == "__main__":
    sys.exit(main())
