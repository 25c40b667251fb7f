#!/usr/bin/env python3
"""Dump golden cases from PyTorch's own Newton-Schulz, torch.optim.Muon and torch.optim.AdamW.

    python3 harness/tools/dump_torch_cases.py OUTDIR [--device cuda|cpu] [--seed N]

Writes OUTDIR/manifest.json (format "dmuon-golden-1", read by harness/verify/golden.cpp) and
the float32 C-order .npy files it names. The C++ reference replays every case from the inputs
recorded here and compares with torch's outputs, so the files hold exactly the tensors torch was
given (float32, drawn on the CPU from one seeded torch.Generator, then moved to the device).

Needs PyTorch with torch.optim.Muon (2.9 or later; written against 2.11) and numpy.
"""

import argparse
import inspect
import json
import math
import os
import sys

import numpy as np
import torch

import provenance  # harness/tools/provenance.py, beside this script

GENERATOR = "harness/tools/dump_torch_cases.py"
FORMAT = "dmuon-golden-1"

# torch.optim.Muon defaults (Keller's quintic), passed explicitly so a changed default in a later
# torch cannot silently change what the manifest claims.
KELLER = (3.4445, -4.7750, 2.0315)
NS_STEPS = 5
NS_EPS = 1e-7
OPT_STEPS = 3  # optimizer steps per muon/adamw case: enough to exercise momentum and bias correction

# --- tolerances: "rel" is ||out - expected||_F / ||expected||_F --------------------------------
# ns: torch runs the iteration in bf16 (cuBLAS bf16 GEMMs with fp32 accumulation on the GPU);
#   the C++ side is a double-precision reference that rounds to bf16 where torch stores bf16.
#   Measured (H100, torch 2.11, these shapes): a reference rounding exactly where torch does
#   (after each fused addmm, see ns_function) matches torch's CPU result to <= 3e-3 and the H100
#   result to <= 4.1e-3 (accumulation order); rounding after every separate op instead is off by
#   2.6e-2..3.5e-2, and 4 instead of 5 steps or other coefficients by >= 3e-1. 2e-2 passes a
#   faithful emulation with 5x room and fails the wrong rounding form or a wrong schedule.
NS_REL = 2e-2
# muon momentum buffer: buf.lerp_(g, 1 - mu) touches only the gradients, in plain fp32
#   elementwise arithmetic (~6e-8 per rounding, a few roundings per step, 3 steps), never the
#   bf16 Newton-Schulz; 1e-6 leaves 10x room over fp32 rounding.
MOMENTUM_REL = 1e-6
# muon weights: W_t = W_{t-1} (1 - lr wd) - lr_adj O_t. The decay and the subtraction are fp32
#   (~1e-7), but O_t carries the ns error above (up to NS_REL of ||O_t||). NS errors do not feed
#   back (the momentum depends on the gradients alone), so after step t the error is at most
#   NS_REL * sum_{s<=t} lr_adj ||O_s||_F; divided by ||W_t||_F this is the per-case "rel",
#   computed from torch's own updates below (times 1.25 for headroom, floor 2e-6 for the fp32
#   part). With W0 ~ N(0, 1) and lr 0.02 it comes out ~1.5e-4 to 2.6e-4, where a faithful
#   reference measured <= 2e-5 (H100, torch 2.11), while a wrong lr adjustment, a missing decay
#   or decay with the adjusted lr moves the weights by 1e-3 or more. (A wrong momentum form
#   barely moves them, normalisation cancels its scale: the momentum check catches it.)
WEIGHT_REL_FLOOR = 2e-6
WEIGHT_REL_HEADROOM = 1.25
# adamw: every op is fp32 elementwise (lerp, mul/addcmul, sqrt, div, addcdiv) with double scalars
#   for the bias corrections; each rounds at ~6e-8 relative and 3 steps compound to a few 1e-7
#   against a double reference, for the weights and both moments alike (measured <= 1e-7 on
#   H100, torch 2.11).
ADAMW_REL = 1e-6

SIZE_BUDGET = 1_500_000  # bytes of .npy in all; the golden set is committed to tests/golden/


def fail(message):
    raise SystemExit(f"dump_torch_cases: {message}")


def ns_function():
    """torch's private Newton-Schulz, called exactly as torch.optim.Muon calls it.

    Returns (fn(grad) -> bf16 tensor, a note saying where torch rounds to bf16)."""
    try:
        from torch.optim import _muon
    except ImportError as e:
        fail(f"torch {torch.__version__} has no torch.optim._muon ({e}); need PyTorch >= 2.9")
    fn = getattr(_muon, "_zeropower_via_newtonschulz", None)
    if fn is None:
        fail("torch.optim._muon._zeropower_via_newtonschulz is gone; update this script")
    names = list(inspect.signature(fn).parameters)
    base = ["grad", "ns_coefficients", "ns_steps", "eps"]
    try:
        source = inspect.getsource(fn)
    except (OSError, TypeError):
        source = ""
    # Where bf16 rounding happens is what a reference has to emulate, and torch has shipped two
    # forms: fused addmm (B = bf16(b A + c A A), X = bf16(a X + B X), fp32 accumulation inside;
    # torch 2.11 always does this) and separate ops (bf16 after every *, @ and +; the form behind
    # use_addmm=False, Muon's default where that argument exists). They differ by ~3e-2.
    fused = "form: fused addmm, B = bf16(b*A + c*A@A), X = bf16(a*X + B@X)"
    separate = "form: separate ops, bf16 after each of b*A, c*A, (c*A)@A, +, a*X, B@X, +"
    if names == base:
        form = fused if "addmm" in source else (separate if source else "form: unknown (no source)")
        return (lambda g: fn(g, KELLER, NS_STEPS, NS_EPS)), form
    if names == base + ["use_addmm"]:
        return (lambda g: fn(g, KELLER, NS_STEPS, NS_EPS, False)), "use_addmm=False, " + separate
    fail(f"_zeropower_via_newtonschulz signature changed: {names}; expected {base} [+ use_addmm]")


def check_kwargs(cls, required):
    names = set(inspect.signature(cls.__init__).parameters)
    missing = [k for k in required if k not in names]
    if missing:
        fail(f"{cls.__module__}.{cls.__name__} lacks arguments {missing}; its API changed")
    return names


def device_flags(device):
    """The backend switches that change bf16/fp32 GEMM results, recorded in every case's notes."""
    if device.type != "cuda":
        return "cpu"
    m = torch.backends.cuda.matmul
    return (f"allow_bf16_reduced_precision_reduction={m.allow_bf16_reduced_precision_reduction}, "
            f"allow_tf32={m.allow_tf32}")


class Writer:
    """Saves float32 .npy files under OUTDIR and keeps their total size.

    They are written in C order so that the files' bytes do not depend on a tensor's strides;
    dmuon's reader (core/io/npy.hpp) reads Fortran order too, as numpy.save writes it for any
    F-contiguous array."""

    def __init__(self, outdir):
        self.outdir = outdir
        self.total = 0
        self.names = set()

    def save(self, stem, tensor):
        name = f"{stem}.npy"
        if name in self.names:
            fail(f"duplicate file name {name}")
        self.names.add(name)
        # bf16 results widen to float32 exactly; numpy has no bf16.
        arr = np.ascontiguousarray(tensor.detach().to("cpu", torch.float32).numpy(), dtype=np.float32)
        path = os.path.join(self.outdir, name)
        np.save(path, arr, allow_pickle=False)
        back = np.load(path, allow_pickle=False)
        if back.dtype != np.float32 or back.shape != arr.shape or not np.array_equal(back, arr, equal_nan=True):
            fail(f"{path} does not read back identically")
        self.total += os.path.getsize(path)
        return name


def randn(gen, *shape):
    return torch.randn(*shape, generator=gen, dtype=torch.float32)


def frob(x):
    return float(np.linalg.norm(np.asarray(x, dtype=np.float64).ravel()))


def round_up_2sig(x):
    """x rounded up to two significant digits, so the manifest holds a short number >= x."""
    e = math.floor(math.log10(x)) - 1
    return float(f"{math.ceil(x / 10.0 ** e) * 10.0 ** e:.2g}")


def ns_case(w, gen, device, ns, ns_form, flags, rows, cols):
    name = f"ns_{rows}x{cols}"
    x = randn(gen, rows, cols)
    y = ns(x.to(device))
    if y.dtype != torch.bfloat16 or tuple(y.shape) != (rows, cols):
        fail(f"{name}: torch's Newton-Schulz returned {y.dtype} {tuple(y.shape)}, expected bf16 {(rows, cols)}")
    if not torch.isfinite(y).all():
        fail(f"{name}: non-finite output")
    return {
        "name": name,
        "kind": "ns",
        "ns": {"coefficients": "keller", "steps": NS_STEPS, "eps": NS_EPS, "norm": "clamp",
               "dtype": "bf16", "normalize_dtype": "bf16"},
        "inputs": {"X": w.save(f"{name}_X", x)},
        "expected": {"Y": w.save(f"{name}_Y", y)},
        "tolerance": {"rel": NS_REL},
        "notes": (f"torch.optim._muon._zeropower_via_newtonschulz(X, {KELLER}, {NS_STEPS}, {NS_EPS}) "
                  f"on {device.type}; {ns_form}; X float32 N(0,1); Y is torch's bf16 result widened to "
                  f"float32; {'transposed inside (tall)' if rows > cols else 'no transpose (wide or square)'}; "
                  f"{flags}"),
    }


def check_ema_momentum(name, grads, buf, mu):
    """torch.optim.Muon keeps buf = lerp(buf, g, 1 - mu); the manifest's preset 'torch' says so."""
    ema = np.zeros(grads[0].shape)
    total = np.zeros(grads[0].shape)
    for g in grads:
        g = g.numpy().astype(np.float64)
        ema += (1.0 - mu) * (g - ema)
        total = mu * total + g
    got = buf.detach().to("cpu", torch.float64).numpy()
    if frob(got - ema) <= 1e-5 * frob(ema):
        return
    form = "sum form mu*buf + g" if frob(got - total) <= 1e-5 * frob(total) else "an unknown form"
    fail(f"{name}: torch's momentum buffer follows {form}, not lerp (ema); the 'torch' preset no longer matches")


def run_steps(opt, p, grads, device):
    """One optimizer step per gradient; the weights after each, on the CPU."""
    weights = []
    for g in grads:
        p.grad = g.to(device).clone()
        opt.step()
        weights.append(p.detach().to("cpu").clone())
    return weights


def muon_case(w, gen, device, flags, muon_args, ns_form, name, rows, cols, *, lr=0.02, weight_decay=0.1,
              momentum=0.95, nesterov=True, adjust_lr="original"):
    w0 = randn(gen, rows, cols)
    grads = [randn(gen, rows, cols) for _ in range(OPT_STEPS)]
    p = torch.nn.Parameter(w0.to(device).clone())
    kwargs = dict(lr=lr, weight_decay=weight_decay, momentum=momentum, nesterov=nesterov,
                  ns_coefficients=KELLER, eps=NS_EPS, ns_steps=NS_STEPS,
                  adjust_lr_fn=None if adjust_lr == "original" else adjust_lr)
    if "use_addmm" in muon_args:
        kwargs["use_addmm"] = False
    opt = torch.optim.Muon([p], **kwargs)
    weights = run_steps(opt, p, grads, device)
    state = opt.state[p]
    if "momentum_buffer" not in state:
        fail(f"{name}: torch.optim.Muon state has no 'momentum_buffer' (keys {sorted(state)})")
    buf = state["momentum_buffer"]
    check_ema_momentum(name, grads, buf, momentum)

    # Weight tolerance from torch's own updates (see WEIGHT_REL_* above): d_t = W_{t-1}(1 - lr wd) - W_t.
    prev = w0.numpy().astype(np.float64)
    update_sum, rel = 0.0, WEIGHT_REL_FLOOR
    for wt in weights:
        cur = wt.numpy().astype(np.float64)
        update_sum += frob(prev * (1.0 - lr * weight_decay) - cur)
        rel = max(rel, WEIGHT_REL_HEADROOM * NS_REL * update_sum / frob(cur))
        prev = cur
    rel = round_up_2sig(rel)

    adj = math.sqrt(max(1.0, rows / cols)) if adjust_lr == "original" else 0.2 * math.sqrt(max(rows, cols))
    return {
        "name": name,
        "kind": "muon",
        "optimizer": {"preset": "torch", "lr": lr, "weight_decay": weight_decay, "momentum": momentum,
                      "nesterov": nesterov, "adjust_lr": adjust_lr},
        "inputs": {"W0": w.save(f"{name}_W0", w0),
                   "grads": [w.save(f"{name}_g{k + 1}", g) for k, g in enumerate(grads)]},
        "expected": {"weights": [w.save(f"{name}_W{k + 1}", x) for k, x in enumerate(weights)],
                     "momentum": w.save(f"{name}_momentum", buf)},
        "tolerance": {"rel": rel, "momentum_rel": MOMENTUM_REL},
        "notes": (f"torch.optim.Muon, {OPT_STEPS} steps on one {rows}x{cols} float32 parameter on {device.type}; "
                  f"W0, g ~ N(0,1); lr multiplier {adj:.6g}; adjust_lr_fn="
                  f"{'None' if adjust_lr == 'original' else repr(adjust_lr)}; Newton-Schulz {ns_form}; weights rel from "
                  f"{NS_REL} x the summed update norms; {flags}"),
    }


def adamw_case(w, gen, device, flags, adamw_args, name, shape, *, lr, betas, eps, weight_decay):
    w0 = randn(gen, *shape)
    grads = [randn(gen, *shape) for _ in range(OPT_STEPS)]
    p = torch.nn.Parameter(w0.to(device).clone())
    kwargs = dict(lr=lr, betas=betas, eps=eps, weight_decay=weight_decay, foreach=False)
    # Pin the plain single-tensor path: fused and amsgrad change the arithmetic or the algorithm.
    for key in ("fused", "amsgrad", "maximize", "capturable"):
        if key in adamw_args:
            kwargs[key] = False
    opt = torch.optim.AdamW([p], **kwargs)
    weights = run_steps(opt, p, grads, device)
    state = opt.state[p]
    for key in ("exp_avg", "exp_avg_sq"):
        if key not in state:
            fail(f"{name}: torch.optim.AdamW state has no '{key}' (keys {sorted(state)})")
    shape_txt = "x".join(str(d) for d in shape)
    return {
        "name": name,
        "kind": "adamw",
        "optimizer": {"adamw": {"lr": lr, "betas": [betas[0], betas[1]], "eps": eps, "weight_decay": weight_decay}},
        "inputs": {"W0": w.save(f"{name}_W0", w0),
                   "grads": [w.save(f"{name}_g{k + 1}", g) for k, g in enumerate(grads)]},
        "expected": {"weights": [w.save(f"{name}_W{k + 1}", x) for k, x in enumerate(weights)],
                     "exp_avg": w.save(f"{name}_exp_avg", state["exp_avg"]),
                     "exp_avg_sq": w.save(f"{name}_exp_avg_sq", state["exp_avg_sq"])},
        "tolerance": {"rel": ADAMW_REL},
        "notes": (f"torch.optim.AdamW(foreach=False, fused=False), {OPT_STEPS} steps on one {shape_txt} "
                  f"({len(shape)}-D) float32 parameter on {device.type}; W0, g ~ N(0,1); {flags}"),
    }


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("outdir", help="directory for manifest.json and the .npy files (created if missing)")
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--seed", type=int, default=20250801)
    args = ap.parse_args(argv)

    if args.device == "cuda" and not torch.cuda.is_available():
        fail("--device cuda but torch.cuda.is_available() is False (use --device cpu to run on the CPU)")
    device = torch.device(args.device)
    device_name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
    if not hasattr(torch.optim, "Muon"):
        fail(f"torch {torch.__version__} has no torch.optim.Muon; need PyTorch >= 2.9")
    ns, ns_form = ns_function()
    muon_args = check_kwargs(torch.optim.Muon, ["lr", "weight_decay", "momentum", "nesterov",
                                                "ns_coefficients", "eps", "ns_steps", "adjust_lr_fn"])
    adamw_args = check_kwargs(torch.optim.AdamW, ["lr", "betas", "eps", "weight_decay", "foreach"])

    os.makedirs(args.outdir, exist_ok=True)
    w = Writer(args.outdir)
    gen = torch.Generator(device="cpu").manual_seed(args.seed)
    flags = device_flags(device)

    cases = []
    # Wide, tall (transposed inside), odd sizes, a single row, square.
    for rows, cols in [(64, 96), (96, 64), (33, 47), (1, 40), (128, 128)]:
        cases.append(ns_case(w, gen, device, ns, ns_form, flags, rows, cols))
    cases.append(muon_case(w, gen, device, flags, muon_args, ns_form, "muon_default_48x80", 48, 80))
    cases.append(muon_case(w, gen, device, flags, muon_args, ns_form, "muon_no_nesterov_48x80", 48, 80, nesterov=False))
    cases.append(muon_case(w, gen, device, flags, muon_args, ns_form, "muon_match_rms_adamw_48x80", 48, 80,
                           adjust_lr="match_rms_adamw"))
    cases.append(muon_case(w, gen, device, flags, muon_args, ns_form, "muon_tall_96x40", 96, 40))
    cases.append(muon_case(w, gen, device, flags, muon_args, ns_form, "muon_wide_24x72", 24, 72))
    for name, shape, betas, wd in [("adamw_2d_b0999_wd001", (48, 32), (0.9, 0.999), 0.01),
                                   ("adamw_2d_b095_wd01", (48, 32), (0.9, 0.95), 0.1),
                                   ("adamw_1d_b095_wd01", (80,), (0.9, 0.95), 0.1),
                                   ("adamw_1d_b0999_wd001", (80,), (0.9, 0.999), 0.01)]:
        cases.append(adamw_case(w, gen, device, flags, adamw_args, name, shape,
                                lr=1e-2, betas=betas, eps=1e-8, weight_decay=wd))

    manifest = {
        "format": FORMAT,
        "generator": GENERATOR,
        "torch_version": torch.__version__,
        "device": device_name,
        **provenance.stamp(),
        "seed": args.seed,
        "cases": cases,
    }
    path = os.path.join(args.outdir, "manifest.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")
    print(f"wrote {path}: {len(cases)} cases, {len(w.names)} .npy files, {w.total} bytes of .npy "
          f"(torch {torch.__version__}, {device_name})", file=sys.stderr)
    if w.total > SIZE_BUDGET:
        fail(f".npy files total {w.total} bytes, over the {SIZE_BUDGET}-byte budget")
    return 0


if __name__ == "__main__":
    sys.exit(main())
