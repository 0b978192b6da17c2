"""Builds a nested batch of torch tensors from a workload config (configs/*.json) in Python.

Covers the spec nodes the shipped StreamPETR configs use: literals, list/tuple (items, repeat,
for), dict, tensor (dtype, shape, values uniform/normal/bernoulli, memory), cycle, let, ref,
value, param; counts as integers, symbols, uniform, normal and param. The values are random
with the config's seed but not the C++ generator's: the structure, shapes and dtypes match,
which is what a copy's time depends on. Other nodes (npy, pt, choose) are refused by name.
"""

import json
from pathlib import Path

import torch

DTYPES = {
    "float32": torch.float32, "float64": torch.float64, "float16": torch.float16, "bfloat16": torch.bfloat16,
    "int64": torch.int64, "int32": torch.int32, "int16": torch.int16, "int8": torch.int8,
    "uint8": torch.uint8, "bool": torch.bool, "complex64": torch.complex64,
}


class SpecError(ValueError):
    """A config this builder cannot read; the message names the file and the JSON place."""


class SpecBatch:
    def __init__(self, path, overrides=None):
        self.path = Path(path)
        try:
            config = json.loads(self.path.read_text())
        except json.JSONDecodeError as error:
            raise SpecError(f"{self.path}: not JSON: {error}") from None
        if not isinstance(config, dict):
            raise SpecError(f"{self.path}: not a JSON object")
        if "structure" not in config:
            raise SpecError(f"{self.path}: no 'structure' (a config with 'input' is not supported here)")
        self.params = dict(config.get("params", {}))
        for name, value in (overrides or {}).items():
            if name not in self.params:
                raise SpecError(f"{self.path}: no parameter '{name}' to set")
            self.params[name] = value
        self.defs = config.get("defs", {})
        self.structure = config["structure"]
        self.generator = torch.Generator().manual_seed(int(config.get("seed", 0)))
        self.cycles = {}

    def build(self):
        return self.node(self.structure, {}, "/structure")

    def fail(self, where, why):
        raise SpecError(f"{self.path}: {where}: {why}")

    def resolve(self, value):
        if isinstance(value, dict) and set(value) == {"param"}:
            return self.params[value["param"]]
        return value

    def count(self, spec, symbols, where):
        spec = self.resolve(spec)
        if isinstance(spec, bool) or spec is None:
            self.fail(where, "a count must be an integer")
        if isinstance(spec, int):
            return spec
        if isinstance(spec, str):
            if spec not in symbols:
                self.fail(where, f"symbol '{spec}' is not bound here")
            return symbols[spec]
        if isinstance(spec, dict) and "uniform" in spec:
            lo, hi = spec["uniform"]
            return int(torch.randint(lo, hi + 1, (), generator=self.generator))
        if isinstance(spec, dict) and "normal" in spec:
            n = spec["normal"]
            drawn = round(n["mean"] + n["std"] * float(torch.randn((), generator=self.generator)))
            return max(n.get("min", 0), min(drawn, n.get("max", drawn)))
        self.fail(where, f"not a count: {json.dumps(spec)}")

    def node(self, spec, symbols, where):
        spec = self.resolve(spec)
        if not isinstance(spec, dict):
            if isinstance(spec, list):
                self.fail(where, "a bare JSON array is not a node")
            return spec
        if len(spec) == 1 or set(spec) == {"let", "in"}:
            kind = "let" if "let" in spec else next(iter(spec))
        else:
            self.fail(where, f"a node has one kind, got {sorted(spec)}")
        body = spec[kind]
        here = f"{where}/{kind}"
        if kind in ("list", "tuple"):
            items = self.sequence(body, symbols, here)
            return items if kind == "list" else tuple(items)
        if kind == "dict":
            return {key: self.node(value, symbols, f"{here}/{key}") for key, value in body.items()}
        if kind == "tensor":
            return self.tensor(body, symbols, here)
        if kind == "cycle":
            k = self.cycles.get(id(spec), 0)
            self.cycles[id(spec)] = k + 1
            return self.node(body[k % len(body)], symbols, f"{here}/{k % len(body)}")
        if kind == "let":
            bound = dict(symbols)
            for name, value in body.items():
                bound[name] = self.count(value, bound, f"{here}/{name}")
            return self.node(spec["in"], bound, f"{where}/in")
        if kind == "ref":
            if body not in self.defs:
                self.fail(here, f"no definition '{body}'")
            return self.node(self.defs[body], symbols, f"/defs/{body}")
        if kind == "value":
            return body
        self.fail(where, f"node kind '{kind}' is not supported by this builder")

    def sequence(self, body, symbols, where):
        if isinstance(body, list):
            return [self.node(item, symbols, f"{where}/{i}") for i, item in enumerate(body)]
        if "repeat" in body:
            n = self.count(body["repeat"], symbols, f"{where}/repeat")
            return [self.node(body["item"], symbols, f"{where}/item") for _ in range(n)]
        if "for" in body:
            columns = {name: self.resolve(values) for name, values in body["for"].items()}
            length = len(next(iter(columns.values())))
            out = []
            for i in range(length):
                bound = dict(symbols)
                for name, values in columns.items():
                    bound[name] = self.count(values[i], bound, f"{where}/for/{name}/{i}")
                out.append(self.node(body["item"], bound, f"{where}/item"))
            return out
        self.fail(where, "expected items, 'repeat' or 'for'")

    def tensor(self, body, symbols, where):
        dtype_name = self.resolve(body.get("dtype", "float32"))
        if dtype_name not in DTYPES:
            self.fail(f"{where}/dtype", f"dtype '{dtype_name}' is not supported by this builder")
        dtype = DTYPES[dtype_name]
        shape = [self.count(d, symbols, f"{where}/shape/{i}") for i, d in enumerate(self.resolve(body.get("shape", [])))]
        values = self.resolve(body.get("values", {}))
        g = self.generator
        if "uniform" in values:
            lo, hi = values["uniform"]
            if dtype.is_floating_point:
                t = torch.rand(shape, generator=g) * (hi - lo) + lo
            else:
                t = torch.randint(int(lo), int(hi) + 1, shape, generator=g)
        elif "normal" in values:
            t = torch.randn(shape, generator=g) * values["normal"]["std"] + values["normal"]["mean"]
        elif "bernoulli" in values:
            t = torch.rand(shape, generator=g) < values["bernoulli"]
        else:
            t = torch.rand(shape, generator=g) * 100
        t = t.to(dtype)
        memory = self.resolve(body.get("memory", "pageable"))
        if memory == "pinned":
            t = t.pin_memory()
        elif memory == "cuda":
            t = t.cuda()
        return t
