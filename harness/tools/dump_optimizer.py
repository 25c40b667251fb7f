#!/usr/bin/env python3
"""Dump any torch optimizer into a golden directory that `dmuon-verify --golden DIR` checks.

    python3 harness/tools/dump_optimizer.py --optimizer module:Class --kwargs JSON --out DIR
        [--kind muon|adamw] [--section JSON] [--shapes 48x80,96x40] [--steps 3]
        [--device cuda|cpu] [--seed N] [--rel X] [--state-rel X] [--momentum-key KEY]
        [--placement shard|replicate|plain]
    torchrun --nproc-per-node N harness/tools/dump_optimizer.py ...   # distributed: rank 0 writes

Runs `Class([param], **kwargs)` for --steps steps on one seeded parameter per shape and writes
DIR/manifest.json (format "dmuon-golden-1", the one harness/tools/dump_torch_cases.py writes and
harness/verify/golden.cpp reads) with float32 C-order .npy files: W0, the gradients, the weights
after every step and the optimizer state (`muon`: the momentum buffer; `adamw`: exp_avg and
exp_avg_sq). dmuon-verify replays each case in its double-precision reference with the case's
`optimizer` section and compares.

What the optimizer computes, in dmuon's terms (the `optimizer` section of a case):
- torch.optim.Muon: kind muon, preset torch, with lr, weight_decay, momentum, nesterov,
  adjust_lr and ns {coefficients, steps, eps} read from the constructed optimizer's param group;
- torch.optim.AdamW: kind adamw, {adamw: {lr, betas, eps, weight_decay}} likewise (amsgrad and
  maximize are refused: the reference has neither);
- any other class: say it with --kind and --section, a scenario's `optimizer` section as JSON
  (a preset plus overrides, core/optimizer/optimizer_yaml.hpp), e.g. a Moonlight-style variant:
  --kind muon --section '{"preset": "moonlight", "lr": 0.02, "weight_decay": 0.1}'.
  The momentum buffer is read from the state key --momentum-key (default momentum_buffer).
--section also overrides what is read for the two torch classes.

Distributed (under torchrun, WORLD_SIZE > 1): every rank draws the same inputs; --placement
shard (default) hands the optimizer DTensor parameters and gradients sharded on dim 0 over all
ranks, replicate DTensors replicated, plain ordinary full tensors on every rank (an optimizer
that communicates itself). DTensor weights and states are gathered with full_tensor() on every
rank; rank 0 writes. gloo on --device cpu, nccl on cuda.

Tolerances ("rel" = ||got - expected||_F / ||expected||_F, as dump_torch_cases.py reasons them):
muon weights: 2e-2 (the bf16 Newton-Schulz) x the summed update norms / ||W_t||, x1.25, floor
2e-6; muon momentum 1e-6; adamw 1e-6. --rel and --state-rel replace them.

Exit status: 0 written; 2 bad arguments, an optimizer that cannot be built or stepped, or a
missing state entry (one line on stderr naming the flag or key).
"""

import argparse
import importlib
import json
import math
import os
import sys

import provenance  # harness/tools/provenance.py, beside this script

GENERATOR = "harness/tools/dump_optimizer.py"
MUON_SHAPES = [(48, 80), (96, 40), (24, 72)]   # wide, tall (transposed inside NS), wide
ADAMW_SHAPES = [(48, 32), (80,)]              # 2-D and 1-D


class DumpError(Exception):
    pass


def fail(message):
    raise DumpError(message)


# --- arguments (checked before torch is imported, so that they fail fast and without torch) ---

def parse_shapes(text):
    shapes = []
    for part in text.split(","):
        try:
            dims = tuple(int(d) for d in part.strip().lower().split("x"))
        except ValueError:
            fail(f"--shapes '{text}': '{part}' is not RxC or N")
        if not dims or len(dims) > 2 or min(dims) <= 0:
            fail(f"--shapes '{text}': '{part}' must be 1-D (N) or 2-D (RxC) with positive sizes")
        shapes.append(dims)
    return shapes


def parse_json_object(flag, text):
    try:
        value = json.loads(text)
    except json.JSONDecodeError as e:
        fail(f"{flag}: malformed JSON at column {e.colno}: {e.msg}")
    if not isinstance(value, dict):
        fail(f"{flag}: expected a JSON object, got {type(value).__name__}")
    return value


def tuples(value):
    """JSON lists become tuples (betas, ns_coefficients), as torch's signatures spell them."""
    if isinstance(value, list):
        return tuple(tuples(v) for v in value)
    if isinstance(value, dict):
        return {k: tuples(v) for k, v in value.items()}
    return value


def parse_args(argv):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter, epilog=__doc__)
    ap.add_argument("--optimizer", required=True, help="module:Class, e.g. torch.optim:Muon or mypkg.optim:MyMuon")
    ap.add_argument("--kwargs", default="{}", help="JSON object of constructor keyword arguments")
    ap.add_argument("--out", required=True, help="golden directory (created; manifest.json + .npy)")
    ap.add_argument("--kind", choices=["muon", "adamw"], help="what the optimizer computes (needed for other classes)")
    ap.add_argument("--section", help="the cases' optimizer section as JSON (needed for other classes)")
    ap.add_argument("--shapes", help="parameter shapes, e.g. 48x80,96x40 (muon: 2-D only)")
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--device", choices=["cuda", "cpu"], default="cuda")
    ap.add_argument("--seed", type=int, default=20250801)
    ap.add_argument("--rel", type=float, help="weights tolerance (default: see the docstring)")
    ap.add_argument("--state-rel", type=float, help="optimizer state tolerance")
    ap.add_argument("--momentum-key", default="momentum_buffer", help="muon: the state key of the momentum buffer")
    ap.add_argument("--placement", choices=["shard", "replicate", "plain"], default="shard",
                    help="distributed runs: how parameters reach the optimizer")
    ap.add_argument("--name", default="", help="case name prefix (default: the class name, lower case)")
    args = ap.parse_args(argv)
    module, sep, attr = args.optimizer.partition(":")
    if not sep:  # module.Class is accepted too
        module, _, attr = args.optimizer.rpartition(".")
    if not module or not attr:
        fail(f"--optimizer '{args.optimizer}': expected module:Class")
    args.module, args.attr = module, attr
    args.kwargs_value = tuples(parse_json_object("--kwargs", args.kwargs))
    args.section_value = parse_json_object("--section", args.section) if args.section is not None else None
    args.shape_list = parse_shapes(args.shapes) if args.shapes else None
    if args.steps < 1:
        fail(f"--steps {args.steps}: must be at least 1")
    for flag, v in (("--rel", args.rel), ("--state-rel", args.state_rel)):
        if v is not None and not (v > 0 and math.isfinite(v)):
            fail(f"{flag} {v}: must be a positive number")
    return args


# --- the optimizer and its dmuon description ------------------------------------------------

def resolve_class(args):
    try:
        obj = importlib.import_module(args.module)
    except ImportError as e:
        fail(f"--optimizer {args.optimizer}: cannot import {args.module} ({e})")
    for part in args.attr.split("."):
        if not hasattr(obj, part):
            fail(f"--optimizer {args.optimizer}: {args.module} has no attribute {args.attr}")
        obj = getattr(obj, part)
    if not callable(obj):
        fail(f"--optimizer {args.optimizer}: not a class")
    return obj


def number(group, key, cls_name):
    if key not in group:
        fail(f"{cls_name}: param group has no '{key}' (keys {sorted(group)}); pass --section")
    v = group[key]
    return float(v.item()) if hasattr(v, "item") else float(v)


def torch_muon_section(group, keller):
    fn = group.get("adjust_lr_fn")
    if fn not in (None, "original", "match_rms_adamw"):
        fail(f"torch.optim.Muon adjust_lr_fn={fn!r}: dmuon knows original and match_rms_adamw")
    coeffs = tuple(float(c) for c in group["ns_coefficients"])
    return {"preset": "torch", "lr": number(group, "lr", "Muon"),
            "weight_decay": number(group, "weight_decay", "Muon"),
            "momentum": number(group, "momentum", "Muon"), "nesterov": bool(group["nesterov"]),
            "adjust_lr": "match_rms_adamw" if fn == "match_rms_adamw" else "original",
            "ns": {"coefficients": "keller" if coeffs == keller else [list(coeffs)],
                   "steps": int(group["ns_steps"]), "eps": number(group, "eps", "Muon")}}


def torch_adamw_section(group):
    for flag in ("amsgrad", "maximize"):
        if group.get(flag):
            fail(f"torch.optim.AdamW {flag}=True: dmuon's AdamW reference has no {flag}")
    betas = [float(b.item()) if hasattr(b, "item") else float(b) for b in group["betas"]]
    return {"adamw": {"lr": number(group, "lr", "AdamW"), "betas": betas, "eps": number(group, "eps", "AdamW"),
                      "weight_decay": number(group, "weight_decay", "AdamW")}}


def kind_of(torch, cls, args):
    """muon or adamw: from the class for torch's own two, else from --kind (with --section)."""
    known = {torch.optim.Muon: "muon", torch.optim.AdamW: "adamw"}
    if cls in known:
        if args.kind and args.kind != known[cls]:
            fail(f"--kind {args.kind}: {args.optimizer} is {known[cls]}")
        return known[cls]
    if args.kind is None or args.section_value is None:
        fail(f"--optimizer {args.optimizer} is neither torch.optim.Muon nor torch.optim.AdamW: say what it "
             "computes with --kind muon|adamw and --section '{\"preset\": ..., ...}' (a scenario's optimizer "
             "section: README 'Optimizer presets', core/optimizer/optimizer_yaml.hpp)")
    return args.kind


def section_of(torch, kind, args, group):
    """The manifest's optimizer section: --section, else read from torch's param group."""
    if args.section_value is not None:
        return args.section_value
    if kind == "adamw":
        return torch_adamw_section(group)
    from torch.optim import _muon
    return torch_muon_section(group, (_muon.DEFAULT_A, _muon.DEFAULT_B, _muon.DEFAULT_C))


# --- running one case -------------------------------------------------------------------------

class Dist:
    """torchrun's world, or a single process."""

    def __init__(self, torch, args):
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        self.rank = int(os.environ.get("RANK", "0"))
        self.mesh = None
        self.placement = args.placement if self.world > 1 else "single"
        if self.world > 1:
            import torch.distributed as dist
            if args.device == "cuda":
                torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
            dist.init_process_group(backend="nccl" if args.device == "cuda" else "gloo")
            if args.placement != "plain":
                from torch.distributed.device_mesh import init_device_mesh
                self.mesh = init_device_mesh(args.device, (self.world,))

    def place(self, torch, t):
        if self.mesh is None:
            return t
        from torch.distributed.tensor import Replicate, Shard, distribute_tensor
        return distribute_tensor(t, self.mesh, [Shard(0) if self.placement == "shard" else Replicate()])

    @staticmethod
    def full(t):
        """The whole tensor on every rank (a collective for a DTensor)."""
        return t.full_tensor() if hasattr(t, "full_tensor") else t

    def close(self):
        if self.world > 1:
            import torch.distributed as dist
            dist.barrier()
            dist.destroy_process_group()


def run_case(torch, cls, args, dist, device, gen, shape):
    w0 = torch.randn(*shape, generator=gen, dtype=torch.float32)
    grads = [torch.randn(*shape, generator=gen, dtype=torch.float32) for _ in range(args.steps)]
    p = torch.nn.Parameter(dist.place(torch, w0.to(device).clone()))
    try:
        opt = cls([p], **args.kwargs_value)
    except Exception as e:  # the user's constructor: its message is the useful part
        fail(f"{args.optimizer}(**{args.kwargs}) on a {'x'.join(map(str, shape))} parameter: "
             f"{type(e).__name__}: {e}")
    weights = []
    for k, g in enumerate(grads):
        p.grad = dist.place(torch, g.to(device).clone())
        try:
            opt.step()
        except Exception as e:
            fail(f"{args.optimizer}.step() {k + 1}: {type(e).__name__}: {e}")
        weights.append(dist.full(p.detach()).to("cpu", torch.float32).clone())
    if not all(bool(torch.isfinite(wt).all()) for wt in weights):
        fail(f"{args.optimizer}: non-finite weights after stepping a {'x'.join(map(str, shape))} parameter")
    return w0, grads, weights, opt.state[p], opt.param_groups[0]


def state_tensor(state, key, args, shape, dist):
    if key not in state:
        fail(f"{args.optimizer}: optimizer state has no '{key}' (keys {sorted(state)})"
             + ("; name it with --momentum-key" if key == args.momentum_key else ""))
    t = dist.full(state[key].detach())
    if tuple(t.shape) != tuple(shape):
        fail(f"{args.optimizer}: state '{key}' has shape {tuple(t.shape)}, the parameter {tuple(shape)}")
    return t


def muon_weight_rel(tools, w0, weights, section):
    """dump_torch_cases.py's bound: NS error x summed update norms / ||W_t||."""
    lr, wd = float(section.get("lr", 0.0)), float(section.get("weight_decay", 0.0))
    np = tools.np  # dump_torch_cases imports numpy as np
    prev = w0.numpy().astype(np.float64)
    update_sum, rel = 0.0, tools.WEIGHT_REL_FLOOR
    for wt in weights:
        cur = wt.numpy().astype(np.float64)
        update_sum += tools.frob(prev * (1.0 - lr * wd) - cur)
        rel = max(rel, tools.WEIGHT_REL_HEADROOM * tools.NS_REL * update_sum / tools.frob(cur))
        prev = cur
    return tools.round_up_2sig(rel)


def build_case(tools, writer, args, kind, section, name, shape, run, dist):
    w0, grads, weights, state, _ = run
    dims = "x".join(map(str, shape))
    if kind == "muon":
        expected_state = {"momentum": state_tensor(state, args.momentum_key, args, shape, dist)}
        rel = args.rel or muon_weight_rel(tools, w0, weights, section)
        tolerance = {"rel": rel, "momentum_rel": args.state_rel or tools.MOMENTUM_REL}
    else:
        expected_state = {k: state_tensor(state, k, args, shape, dist) for k in ("exp_avg", "exp_avg_sq")}
        tolerance = {"rel": args.rel or tools.ADAMW_REL}
        if args.state_rel:
            tolerance["state_rel"] = args.state_rel
    if writer is None:  # ranks other than 0 took part in the gathers only
        return None
    expected = {"weights": [writer.save(f"{name}_W{k + 1}", w) for k, w in enumerate(weights)]}
    expected.update({k: writer.save(f"{name}_{k}", t) for k, t in expected_state.items()})
    return {
        "name": name, "kind": kind, "optimizer": section,
        "inputs": {"W0": writer.save(f"{name}_W0", w0),
                   "grads": [writer.save(f"{name}_g{k + 1}", g) for k, g in enumerate(grads)]},
        "expected": expected, "tolerance": tolerance,
        "notes": (f"{args.optimizer}(**{json.dumps(args.kwargs_value)}), {args.steps} steps on one {dims} float32 "
                  f"parameter; W0, g ~ N(0,1); {dist.world} rank(s), placement {dist.placement}"),
    }


def dump(args):
    try:
        import numpy as np  # noqa: F401
        import torch
    except ImportError as e:
        fail(f"needs PyTorch and numpy ({e})")
    if not hasattr(torch.optim, "Muon"):
        fail(f"torch {torch.__version__} has no torch.optim.Muon; need PyTorch >= 2.9")
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import dump_torch_cases as tools  # the format's constants, tolerances and .npy writer
    if args.device == "cuda" and not torch.cuda.is_available():
        fail("--device cuda but torch.cuda.is_available() is False (use --device cpu)")
    cls = resolve_class(args)
    dist = Dist(torch, args)
    device = torch.device(args.device, int(os.environ.get("LOCAL_RANK", "0"))) if args.device == "cuda" \
        else torch.device("cpu")
    gen = torch.Generator(device="cpu").manual_seed(args.seed)
    writer = None
    if dist.rank == 0:
        os.makedirs(args.out, exist_ok=True)
        writer = tools.Writer(args.out)
    prefix = args.name or args.attr.split(".")[-1].lower()
    kind = kind_of(torch, cls, args)
    shapes = args.shape_list or (MUON_SHAPES if kind == "muon" else ADAMW_SHAPES)
    if kind == "muon" and any(len(shape) != 2 for shape in shapes):
        fail(f"--shapes {args.shapes}: muon cases need 2-D shapes")
    cases = []
    for i, shape in enumerate(shapes):
        run = run_case(torch, cls, args, dist, device, gen, shape)
        section = section_of(torch, kind, args, run[4])
        case = build_case(tools, writer, args, kind, section, f"{prefix}_{i + 1}_{'x'.join(map(str, shape))}",
                          shape, run, dist)
        if case:
            cases.append(case)
    if writer is not None:
        name = torch.cuda.get_device_name(device) if device.type == "cuda" else "cpu"
        manifest = {"format": tools.FORMAT, "generator": GENERATOR, "torch_version": torch.__version__,
                    "device": name if dist.world == 1 else f"{name} x {dist.world} ranks ({dist.placement})",
                    **provenance.stamp(),
                    "seed": args.seed, "cases": cases}
        path = os.path.join(args.out, "manifest.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(manifest, f, indent=1)
            f.write("\n")
        print(f"dump_optimizer: wrote {path}: {len(cases)} {kind} cases, {len(writer.names)} .npy files, "
              f"{writer.total} bytes ({args.optimizer}, torch {torch.__version__}, {manifest['device']})",
              file=sys.stderr)
    dist.close()


def main(argv=None):
    try:
        dump(parse_args(argv))
    except DumpError as e:
        print(f"dump_optimizer: {e}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
