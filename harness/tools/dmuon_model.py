"""dmuon model and scenario YAML -> a Hugging Face transformers config (shared by
measure_layers.py, measure_host_floor.py and fsdp2_step.py, with the options that name them).

Reads the same files dmuon reads (scenarios/*.yaml, scenarios/models/*.yaml; their format is
core/model/model_yaml.cpp and core/model/transformer_generator.hpp) and maps a model's `transformer` section
to the transformers family whose code builds exactly those parameters:

    qwen2     qkv_bias, no o_bias                       (Qwen2 / Qwen2.5)
    llama     no biases, or q/k/v/o biases (attention_bias), optional mlp_bias (Llama 2/3)
    qwen3     qk_norm, no biases                        (Qwen3)
    qwen3_moe qk_norm + moe without shared experts      (Qwen3-MoE; top-k from training.moe_top_k)

Anything else (fused qkv, LayerNorm, ungated MLP, no final norm, several towers, explicit
parameters) stops with an error naming the key: a timing of another architecture would be
recorded under this model's name. Rotary base and norm epsilon are left at the family's
defaults: they do not change the work done, only the values.

Only map_model() and the loaders run without torch (python3 dmuon_model.py MODEL.yaml prints
the mapping); transformers is imported when a config is built.
"""

import os
import sys

import yaml


class ModelError(Exception):
    """A model or scenario this tool cannot use; the message names the file and key."""


def load_yaml(path):
    try:
        with open(path) as f:
            doc = yaml.safe_load(f)
    except OSError as e:
        raise ModelError(f"{path}: cannot open file: {e.strerror}")
    except yaml.YAMLError as e:
        raise ModelError(f"{path}: not valid YAML: {e}")
    if not isinstance(doc, dict):
        raise ModelError(f"{path}: expected a mapping at the top level")
    return doc


def positive_int(value, where):
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise ModelError(f"{where}: expected an integer > 0, got {value!r}")
    return value


def resolve(scenario=None, model=None, seq_len=None, micro_batch=None):
    """Returns dict(model=<model mapping>, model_file, name, seq_len, micro_batch, moe_top_k).
    A scenario gives the model (a path relative to it, or inline) and training.seq_len /
    micro_batch / moe_top_k; explicit seq_len / micro_batch override it."""
    top_k = None
    model_file = model
    if scenario:
        doc = load_yaml(scenario)
        entry = doc.get("model")
        if isinstance(entry, str):
            model_file = os.path.normpath(os.path.join(os.path.dirname(scenario), entry))
            model_doc = load_yaml(model_file)
        elif isinstance(entry, dict):
            model_file, model_doc = scenario + ":model", entry
        else:
            raise ModelError(f"{scenario}: model: missing (a path or a mapping)")
        training = doc.get("training") or {}
        if not isinstance(training, dict):
            raise ModelError(f"{scenario}: training: expected a mapping")
        # dmuon's defaults (core/io/scenario.hpp TrainingSpec) when the scenario does not say.
        seq_len = seq_len or positive_int(training.get("seq_len", 2048), f"{scenario}: training.seq_len")
        micro_batch = micro_batch or positive_int(training.get("micro_batch", 1), f"{scenario}: training.micro_batch")
        if "moe_top_k" in training:
            top_k = positive_int(training["moe_top_k"], f"{scenario}: training.moe_top_k")
    elif model:
        model_doc = load_yaml(model)
    else:
        raise ModelError("give --scenario FILE, or --model FILE --seq-len N --micro-batch N")
    if not seq_len or not micro_batch:
        raise ModelError("--seq-len and --micro-batch: required with --model")
    name = model_doc.get("name")
    if not isinstance(name, str) or not name:
        raise ModelError(f"{model_file}: name: missing")
    return dict(model=model_doc, model_file=model_file, name=name, seq_len=int(seq_len),
                micro_batch=int(micro_batch), moe_top_k=top_k)


def add_spec_arguments(parser, scenario_help="dmuon scenario YAML (its model, training.seq_len, training.micro_batch)"):
    """The options resolve() reads a model and shape from, as the tools of this folder take them."""
    parser.add_argument("--scenario", help=scenario_help)
    parser.add_argument("--model", help="dmuon model YAML (with --seq-len and --micro-batch)")
    parser.add_argument("--seq-len", type=int)
    parser.add_argument("--micro-batch", type=int)


def require_spec_arguments(parser, args):
    """parser.error (exit 2) when add_spec_arguments' options name no model."""
    if not args.scenario and not args.model:
        parser.error("give --scenario FILE, or --model FILE --seq-len N --micro-batch N")


def spec_argv(args):
    """The command-line options that give another tool of this folder the same model and shape."""
    argv = ["--scenario", args.scenario] if args.scenario else ["--model", args.model]
    for flag, value in (("--seq-len", args.seq_len), ("--micro-batch", args.micro_batch)):
        if value:
            argv += [flag, str(value)]
    return argv


def _refuse(where, key, why):
    raise ModelError(f"{where}.{key}: {why}; this tool maps Qwen2, Llama, Qwen3 and Qwen3-MoE decoders only")


def map_model(model, where="model", moe_top_k=None):
    """(family, kwargs for the transformers config class) from a dmuon model mapping."""
    for key in ("towers", "params"):
        if key in model:
            _refuse(where, key, "a model with several towers or explicit parameters")
    t = model.get("transformer")
    if not isinstance(t, dict):
        raise ModelError(f"{where}.transformer: missing (a mapping)")
    w = where + ".transformer"
    known = {"prefix", "hidden", "layers", "heads", "kv_heads", "head_dim", "ffn", "vocab",
             "tied_embeddings", "fused_qkv", "qkv_bias", "o_bias", "mlp_gated", "mlp_bias", "qk_norm",
             "final_norm", "norm", "moe"}
    for key in t:
        if key not in known:
            raise ModelError(f"{w}.{key}: unknown key")
    flag = lambda key, default=False: bool(t.get(key, default))
    if flag("fused_qkv"):
        _refuse(w, "fused_qkv", "a fused qkv projection")
    if t.get("norm", "rmsnorm") != "rmsnorm":
        _refuse(w, "norm", "LayerNorm")
    if not flag("mlp_gated", True):
        _refuse(w, "mlp_gated", "an ungated MLP")
    if not flag("final_norm", True):
        _refuse(w, "final_norm", "no final norm")
    if t.get("prefix", "model") != "model":
        _refuse(w, "prefix", "a tower that is not the language model")
    hidden = positive_int(t.get("hidden"), f"{w}.hidden")
    heads = positive_int(t.get("heads"), f"{w}.heads")
    vocab = positive_int(t.get("vocab"), f"{w}.vocab")
    kv = {"num_key_value_heads": positive_int(t.get("kv_heads", heads), f"{w}.kv_heads")}
    head_dim = positive_int(t.get("head_dim", hidden // heads), f"{w}.head_dim")
    kw = dict(hidden_size=hidden, num_hidden_layers=positive_int(t.get("layers"), f"{w}.layers"),
              num_attention_heads=heads, head_dim=head_dim, vocab_size=vocab,
              tie_word_embeddings=flag("tied_embeddings"), **kv)
    qkv_bias, o_bias, mlp_bias = flag("qkv_bias"), flag("o_bias"), flag("mlp_bias")
    moe = t.get("moe")
    if moe is not None:
        return "qwen3_moe", _map_moe(kw, t, moe, w, moe_top_k, qkv_bias or o_bias or mlp_bias)
    kw["intermediate_size"] = positive_int(t.get("ffn"), f"{w}.ffn")
    if flag("qk_norm"):
        if qkv_bias or o_bias or mlp_bias:
            _refuse(w, "qk_norm", "qk_norm with biases")
        return "qwen3", dict(kw, attention_bias=False)
    if qkv_bias and not o_bias:
        if mlp_bias:
            _refuse(w, "mlp_bias", "Qwen2 (qkv_bias) with an MLP bias")
        return "qwen2", dict(kw, use_sliding_window=False)
    if o_bias and not qkv_bias:
        _refuse(w, "o_bias", "an output-projection bias without q/k/v biases")
    return "llama", dict(kw, attention_bias=qkv_bias, mlp_bias=mlp_bias)


def _map_moe(kw, t, moe, w, moe_top_k, biases):
    if not t.get("qk_norm") or biases:
        _refuse(w, "moe", "MoE other than Qwen3-MoE (qk_norm, no biases)")
    if not isinstance(moe, dict):
        raise ModelError(f"{w}.moe: expected a mapping")
    if moe.get("shared_experts", 0):
        _refuse(w, "moe.shared_experts", "shared experts")
    if moe_top_k is None:
        raise ModelError(f"{w}.moe: needs training.moe_top_k in the scenario (experts per token)")
    dense = int(moe.get("dense_layers", 0))
    return dict(kw, num_experts=positive_int(moe.get("experts"), f"{w}.moe.experts"),
                moe_intermediate_size=positive_int(moe.get("expert_ffn"), f"{w}.moe.expert_ffn"),
                num_experts_per_tok=moe_top_k, decoder_sparse_step=1, mlp_only_layers=list(range(dense)),
                intermediate_size=int(t.get("ffn", moe.get("expert_ffn"))), attention_bias=False,
                norm_topk_prob=True)


# family -> (module, config class, decoder layer, rotary embedding, RMSNorm)
FAMILIES = {
    "qwen2": ("qwen2", "Qwen2Config", "Qwen2DecoderLayer", "Qwen2RotaryEmbedding", "Qwen2RMSNorm"),
    "llama": ("llama", "LlamaConfig", "LlamaDecoderLayer", "LlamaRotaryEmbedding", "LlamaRMSNorm"),
    "qwen3": ("qwen3", "Qwen3Config", "Qwen3DecoderLayer", "Qwen3RotaryEmbedding", "Qwen3RMSNorm"),
    "qwen3_moe": ("qwen3_moe", "Qwen3MoeConfig", "Qwen3MoeDecoderLayer", "Qwen3MoeRotaryEmbedding",
                  "Qwen3MoeRMSNorm"),
}


def family_classes(family):
    """(config class, decoder layer, rotary embedding, RMSNorm) of a family, from transformers."""
    import importlib
    module_name, *names = FAMILIES[family]
    module = importlib.import_module(f"transformers.models.{module_name}.modeling_{module_name}")
    config_module = importlib.import_module(f"transformers.models.{module_name}.configuration_{module_name}")
    return (getattr(config_module, names[0]),) + tuple(getattr(module, n) for n in names[1:])


def build_config(family, kwargs, seq_len):
    """A transformers config with attention on SDPA (flash for causal bf16 without a mask)."""
    config_cls = family_classes(family)[0]
    config = config_cls(max_position_embeddings=max(seq_len, 4096), **kwargs)
    config._attn_implementation = "sdpa"  # what attn_implementation="sdpa" sets
    config.use_cache = False
    return config


def build_causal_lm(torch, family, kwargs, seq_len, device, layers=None):
    """The causal LM of `kwargs` (map_model) on `device` in bf16, in train mode, randomly
    initialised; `layers` decoder layers where given (a cut-down depth), else the model's own.
    Returns (model, vocab_size)."""
    from transformers import AutoModelForCausalLM
    if layers is not None:
        kwargs = dict(kwargs, num_hidden_layers=layers)
    config = build_config(family, kwargs, seq_len)
    with torch.device(device):
        model = AutoModelForCausalLM.from_config(config)
    model = model.to(torch.bfloat16)
    model.train()
    return model, config.vocab_size


if __name__ == "__main__":
    try:
        r = resolve(model=sys.argv[1], seq_len=2048, micro_batch=1)
        print(map_model(r["model"], r["model_file"], moe_top_k=int(sys.argv[2]) if len(sys.argv) > 2 else None))
    except ModelError as e:
        sys.exit(f"dmuon_model.py: {e}")
