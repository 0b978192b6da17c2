"""Checks that a copied structure is its input on the target device, bit for bit.

    difference(out, ref, "cuda")  ->  None, or where and how `out` differs from `ref`

Containers (list, tuple, dict) must come back as new containers of the same type, length and
keys in the same order; tensors on the target (an index-less "cuda" means the current device)
with ref's dtype, shape and bytes (compared on the CPU, so NaN payloads and -0.0 count); every
other leaf must be the very object of ref. A structure without a single tensor is refused:
comparing nothing would always pass.
"""

import torch


def target_device(device):
    """torch.device(device), with the index a bare "cuda" resolves to."""
    target = torch.device(device)
    if target.type == "cuda" and target.index is None:
        return torch.device("cuda", torch.cuda.current_device())
    return target


def _bytes(tensor):
    flat = tensor.detach().resolve_conj().resolve_neg().cpu().contiguous().reshape(-1)
    return flat.view(torch.uint8)


def _walk(out, ref, target, where, counter):
    if type(ref) in (list, tuple, dict):
        if type(out) is not type(ref):
            return f"{where}: a {type(out).__name__}, expected a {type(ref).__name__}"
        if out is ref and len(ref) > 0:
            return f"{where}: the input container itself, not a copy"
        if len(out) != len(ref):
            return f"{where}: {len(out)} elements, expected {len(ref)}"
        if type(ref) is dict:
            if list(out) != list(ref):
                return f"{where}: keys {list(out)}, expected {list(ref)}"
            pairs = ((f"{where}[{k!r}]", out[k], ref[k]) for k in ref)
        else:
            pairs = ((f"{where}[{i}]", o, r) for i, (o, r) in enumerate(zip(out, ref)))
        for place, o, r in pairs:
            why = _walk(o, r, target, place, counter)
            if why:
                return why
        return None
    if isinstance(ref, torch.Tensor):
        if not isinstance(out, torch.Tensor):
            return f"{where}: a {type(out).__name__}, expected a tensor"
        if out.device != target:
            return f"{where}: on {out.device}, expected {target}"
        if out.dtype != ref.dtype or out.shape != ref.shape:
            return f"{where}: {out.dtype} {tuple(out.shape)}, expected {ref.dtype} {tuple(ref.shape)}"
        if not torch.equal(_bytes(out), _bytes(ref)):
            return f"{where}: the values differ"
        counter[0] += 1
        return None
    return None if out is ref else f"{where}: not the input's object"


def difference(out, ref, device):
    counter = [0]
    why = _walk(out, ref, target_device(device), "data", counter)
    if why is None and counter[0] == 0:
        return "data: no tensor to compare"
    return why
