"""A dropped result's containers coming back as a later copy's result (src/python/csrc/py_shell.cpp;
mtc._deferred says when). The module's side runs without a GPU through mtc._C._keep_result, which
keeps a structure as a copy to a GPU keeps its result; whole copies need a GPU and skip, saying why,
without one."""

import gc

import pytest
import torch

import mtc
from support import assert_copied, gpu_mark


@pytest.fixture(autouse=True)
def reuse_on():
    previous = (mtc.set_deferred_release(True), mtc.set_output_reuse(True),
                mtc._C._set_container_reuse(True))
    mtc.release_deferred()
    yield
    mtc.release_deferred()
    mtc.set_deferred_release(previous[0])
    mtc.set_output_reuse(previous[1])
    mtc._C._set_container_reuse(previous[2])


def shaped(seed, grow=0, name="frame"):
    """48 small tensors in dicts in a list, a tuple of two in each dict, and a string that changes
    from batch to batch; `grow` changes every size."""
    g = torch.Generator().manual_seed(seed)
    return [{"boxes": torch.rand(i % 5 + 1 + grow, 4, generator=g),
             "pair": (torch.randint(0, 9, (i % 3 + 1 + grow,), generator=g),
                      torch.rand(i % 4 + 1 + grow, generator=g) < 0.5),
             "name": f"{name}-{seed}-{i}"}
            for i in range(16)]


def leaves(structure):
    return [t for element in structure for t in (element["boxes"], *element["pair"])]


def kept(seed=0):
    """What a copy of shaped(seed) to a GPU keeps when its result is dropped: its root's id, its
    tensors' ids by leaf."""
    root = shaped(seed)
    tensors = leaves(root)
    mtc._C._keep_result(root, tensors)
    ids = (id(root), [id(t) for t in tensors])
    return root, ids


# The module's side, on any machine.
def test_a_dropped_result_is_offered_with_its_containers():
    root, (root_id, ids) = kept()
    assert mtc.deferred_release_stats()["containers"] == 1
    del root
    taken, shell = mtc._C._take_reusable([True] * 48, with_shell=True)
    assert id(shell) == root_id and [id(t) for t in taken] == ids
    assert leaves(shell) == taken  # each offered object at its leaf
    assert mtc.deferred_release_stats()["results"] == 0


def test_a_result_the_program_holds_offers_nothing():
    root, _ = kept()
    assert mtc._C._take_reusable([True] * 48, with_shell=True) == ([], None)
    assert mtc.deferred_release_stats()["containers"] == 1


@pytest.mark.parametrize("held", ["container", "tensor", "first tensor"])
def test_what_the_program_still_reaches_keeps_the_containers_and_itself_from_reuse(held):
    root, (_, ids) = kept()
    if held == "container":
        mine, reached = root[3], {id(t) for t in (root[3]["boxes"], *root[3]["pair"])}
    else:
        mine = root[0]["boxes"] if held == "first tensor" else root[5]["pair"][1]
        reached = {id(mine)}
    del root
    taken, shell = mtc._C._take_reusable([True] * 48, with_shell=True)
    # Dropping the root counts as dropping the result; what it held is offered leaf by leaf, but
    # for what the program reaches.
    assert shell is None
    assert [id(t) for t in taken if t is not None] == [i for i in ids if i not in reached]
    assert mine is not None


def test_a_tensor_the_program_put_into_a_dropped_result_keeps_its_containers_from_reuse():
    root, _ = kept()
    mine = torch.zeros(3)
    root[2]["boxes"] = mine
    del root
    taken, shell = mtc._C._take_reusable([True] * 48, with_shell=True)
    # The tensor it replaced is the module's alone, and offered.
    assert shell is None and all(t is not None and t is not mine for t in taken)


def test_a_copy_that_wants_some_leaves_only_gets_no_containers():
    root, _ = kept()
    del root
    taken, shell = mtc._C._take_reusable([k != 7 for k in range(48)], with_shell=True)
    assert shell is None and taken[7] is None and sum(t is not None for t in taken) == 47


def test_turning_container_reuse_off_drops_the_containers_and_keeps_the_tensors():
    root, (_, ids) = kept()
    del root
    assert mtc._C._set_container_reuse(False) is True
    assert mtc.deferred_release_stats()["containers"] == 0
    assert mtc.deferred_release_stats()["tensors"] == 48
    taken, shell = mtc._C._take_reusable([True] * 48, with_shell=True)
    assert shell is None and [id(t) for t in taken] == ids


def test_a_release_drops_the_containers():
    root, _ = kept()
    root_id = id(root)
    del root
    assert mtc.release_deferred() == 48
    gc.collect()
    assert all(id(o) != root_id for o in gc.get_objects() if type(o) is list)
    assert mtc.deferred_release_stats()["containers"] == 0


# Whole copies.
def on_gpu(test):
    for mark in gpu_mark():
        test = mark(test)
    return test


def copy(data):
    handle = mtc.start_copy(data, "cuda")
    return handle.get(), handle.stats()


@pytest.mark.parametrize("grow", [0, 1])
@on_gpu
def test_a_loop_gets_the_result_before_last_back_with_the_new_data(grow):
    ids, out = [], None
    for i in range(6):
        data = shaped(i, grow=grow * (i % 2))
        out, stats = copy(data)  # the previous result is still bound to `out` during the copy
        assert_copied(out, data, "cuda:0")  # the names too: the new input's strings
        ids.append((id(out), id(out[4]), id(out[4]["pair"])))
        if i >= 2:
            assert ids[i] == ids[i - 2] and stats["recycled"] == 48
    assert mtc.deferred_release_stats()["containers"] == 2


@on_gpu
def test_a_result_dropped_before_the_copy_comes_back_at_once():
    out, _ = copy(shaped(0))
    first = id(out)
    out = None
    data = shaped(1)
    out, _ = copy(data)
    assert id(out) == first
    assert_copied(out, data, "cuda:0")


@on_gpu
def test_equal_keys_of_other_objects_take_the_containers_and_keep_their_own_keys():
    out, _ = copy(shaped(0))
    first, key = id(out), next(iter(out[0]))
    out = None
    data = [{"".join(k): v for k, v in element.items()} for element in shaped(1)]
    assert next(iter(data[0])) is not key
    out, _ = copy(data)
    assert id(out) == first and next(iter(out[0])) is key
    assert [list(o) for o in out] == [list(d) for d in data]
    for o, d in zip(out, data):
        assert all(torch.equal(o[k][0].cpu() if k == "pair" else o[k].cpu(),
                               d[k][0] if k == "pair" else d[k]) for k in ("boxes", "pair"))


@pytest.mark.parametrize("change", ["key order", "an extra key", "a tuple's leaf", "a list"])
@on_gpu
def test_a_result_of_another_shape_gets_new_containers(change):
    out, _ = copy(shaped(0))
    first = id(out)
    out = None
    data = shaped(1)
    if change == "key order":
        data[3] = dict(reversed(list(data[3].items())))
    elif change == "an extra key":
        data[3]["extra"] = 1
    elif change == "a tuple's leaf":
        data[3]["pair"] = (data[3]["pair"][0], data[3]["pair"][1], "third")
    else:
        data[3]["pair"] = list(data[3]["pair"])
    out, _ = copy(data)
    assert_copied(out, data, "cuda:0")
    kept = out
    out = None
    data = shaped(2)  # the shape of the first again: that result's containers went
    out, _ = copy(data)
    assert_copied(out, data, "cuda:0")
    assert id(out) != first or id(out) == id(kept)


@on_gpu
def test_a_dropped_result_the_program_changed_is_not_the_new_one():
    out, _ = copy(shaped(0))
    out[1]["boxes"] = "mine"
    out[2]["note"] = "mine"
    out.append("mine")
    out = None
    data = shaped(1)
    out, _ = copy(data)
    assert_copied(out, data, "cuda:0")


@on_gpu
def test_a_container_the_program_kept_out_of_a_dropped_result_is_left_alone():
    out, _ = copy(shaped(0))
    mine = out[3]
    before = {k: (v.cpu().clone() if k == "boxes" else v) for k, v in mine.items()}
    out = None
    for i in (1, 2, 3):
        data = shaped(i)
        out, _ = copy(data)
        assert_copied(out, data, "cuda:0")
        assert all(o is not mine for o in out)
    assert torch.equal(mine["boxes"].cpu(), before["boxes"]) and mine["name"] == before["name"]
    assert mine["pair"] is before["pair"]
