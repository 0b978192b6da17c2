"""start_copy to and from a CUDA device. Every test here is skipped, saying why, without one."""

import collections
import time

import pytest
import torch

import mtc
from support import ProgressWatcher, assert_copied, errors_in_threads, gpu_mark, printed_by

pytestmark = gpu_mark()

# About 0.1-0.2 s of GPU time on the chips this project runs on (torch.cuda._sleep spins cycles).
LONG_SLEEP_CYCLES = 300_000_000


def reference_like_batch(samples=16):
    """The StreamPETR-like batch of configs/streampetr.json (shapes only; values random)."""
    bases = [(60, [30, 20, 40, 10, 50, 20]), (100, [60, 40, 30, 70, 20, 50]),
             (45, [10, 20, 10, 30, 20, 10]), (120, [80, 50, 60, 40, 70, 30])]
    batch = []
    for s in range(samples):
        g, ns = bases[s % 4]
        cams = [{"bounding_boxes": torch.rand(n, 4), "class_ids": torch.randint(0, 9, (n,)),
                 "active": torch.rand(n) < 0.9, "depths": torch.rand(n), "proj_mat": torch.randn(3, 4)}
                for n in ns]
        gt = {"bounding_boxes_3d": torch.randn(g, 7), "class_ids": torch.randint(0, 9, (g,)),
              "active": torch.rand(g) < 0.9}
        batch.append({"cams_gt": cams, "gt_data": gt})
    return batch


@pytest.mark.parametrize("device", ["cuda", "cuda:0", torch.device("cuda", 0), torch.device("cuda")])
def test_cpu_to_gpu_of_the_reference_batch(device):
    batch = reference_like_batch()
    handle = mtc.start_copy(batch, device)
    out = handle.get()
    assert_copied(out, batch, "cuda:0")
    stats = handle.stats()
    assert stats["tensors"] == 528 and stats["packed"] == 528 and stats["per_tensor"] == 0


def test_gpu_to_cpu_and_gpu_to_the_same_gpu():
    batch = mtc.start_copy(reference_like_batch(4), "cuda").get()
    on_cpu = mtc.start_copy(batch, "cpu").get()
    assert_copied(on_cpu, batch, "cpu")
    same = mtc.start_copy(batch, "cuda:0").get()
    assert same[0]["gt_data"]["active"] is batch[0]["gt_data"]["active"]


def test_large_and_non_contiguous_tensors():
    data = {"large": torch.randn(1024, 1024), "t": torch.randn(64, 32).t(), "strided": torch.arange(100.0)[::3]}
    assert_copied(mtc.start_copy(data, "cuda").get(), data, "cuda:0")


def test_numpy_arrays_to_the_gpu():
    np = pytest.importorskip("numpy", reason="numpy is not installed")
    data = {"a": np.arange(12, dtype=np.float32).reshape(3, 4), "r": np.arange(5)[::-1]}
    out = mtc.start_copy(data, "cuda").get()
    assert out["a"].is_cuda and torch.equal(out["a"].cpu(), torch.from_numpy(data["a"]))
    assert out["r"].tolist() == [4, 3, 2, 1, 0]


def test_tensors_inside_opaque_leaves_stay_where_they_are():
    class Batch(list):  # not a container pytree knows: a leaf
        pass

    batch = Batch([torch.ones(2)])
    out = mtc.start_copy([batch, torch.ones(1)], "cuda").get()
    assert out[0] is batch and not batch[0].is_cuda and out[1].is_cuda


def test_pytree_containers_to_the_gpu_and_back():
    Pair = collections.namedtuple("Pair", "a b")
    data = {"pair": Pair(torch.ones(2), [torch.zeros(3)]),
            "ordered": collections.OrderedDict(z=torch.arange(4), a=torch.ones(1)),
            "counts": collections.defaultdict(list, k=[torch.ones(2)]),
            "window": collections.deque([torch.rand(2, 2)], maxlen=3)}
    on_gpu = mtc.start_copy(data, "cuda").get()
    assert_copied(on_gpu, data, "cuda:0")
    assert_copied(mtc.start_copy(on_gpu, "cpu").get(), on_gpu, "cpu")


def test_new_tensors_carry_no_autograd_history():
    # Like the engine's C++ outputs: a Parameter or a tensor that requires grad becomes a plain
    # tensor without history on the target (.to() would give one with grad_fn=ToCopyBackward).
    parameter = torch.nn.Parameter(torch.ones(3))
    needs_grad = torch.ones(2, requires_grad=True) * 2
    out = mtc.start_copy({"p": parameter, "g": needs_grad}, "cuda").get()
    for tensor in out.values():
        assert type(tensor) is torch.Tensor and not tensor.requires_grad and tensor.grad_fn is None
    assert torch.equal(out["p"].cpu(), parameter.detach())


def test_pinned_host_outputs():
    data = [torch.rand(1 << 18, device="cuda"), torch.rand(100, device="cuda")]  # 1 MiB, 400 B
    handle = mtc.start_copy(data, "cpu", pinned_host_outputs=True, pack_cpu_tensors=False)
    out = handle.get()
    assert_copied(out, data, "cpu")
    assert handle.options()["pinned_host_outputs"] is True
    assert all(t.is_pinned() for t in out)
    plain = mtc.start_copy(data, "cpu", pack_cpu_tensors=False).get()
    assert not any(t.is_pinned() for t in plain)
    # Packed: the small tensors are views of one pinned block the DMA landed in.
    handle = mtc.start_copy(data, "cpu", pinned_host_outputs=True)
    out = handle.get()
    assert_copied(out, data, "cpu")
    assert handle.stats()["packed"] >= 1
    assert all(t.is_pinned() for t in out)
    assert not any(t.is_pinned() for t in mtc.start_copy(data, "cpu").get())


def test_pack_cpu_tensors_off_copies_each_tensor_alone():
    handle = mtc.start_copy(reference_like_batch(4), "cuda", pack_cpu_tensors=False)
    handle.get()
    stats = handle.stats()
    assert stats["packed"] == 0 and stats["chunks"] == 0 and stats["per_tensor"] == 132


def test_use_pinned_staging_decides_whether_staging_is_pinned():
    on = mtc.start_copy(reference_like_batch(4), "cuda")
    on.get()
    batch = reference_like_batch(4)
    off = mtc.start_copy(batch, "cuda", use_pinned_staging=False)
    assert_copied(off.get(), batch, "cuda:0")
    assert on.stats()["pinned_bytes"] > 0
    assert off.stats()["pinned_bytes"] == 0


def test_max_packed_chunk_bytes_splits_the_chunks():
    data = [torch.ones(256) for _ in range(64)]  # 64 x 1 KiB
    big = mtc.start_copy(data, "cuda")
    big.get()
    small = mtc.start_copy(data, "cuda", max_packed_chunk_bytes=4096)
    assert_copied(small.get(), data, "cuda:0")
    assert big.stats()["chunks"] == 1
    assert small.stats()["chunks"] >= 16


@pytest.mark.parametrize("alignment", [1, 64, 256])
def test_min_packed_alignment_bytes_aligns_every_packed_tensor(alignment):
    data = [torch.ones(n, dtype=torch.uint8) for n in (1, 3, 7, 100, 5)]
    handle = mtc.start_copy(data, "cuda", min_packed_alignment_bytes=alignment)
    out = handle.get()
    assert handle.stats()["packed"] == 5
    offsets = [t.data_ptr() - out[0].data_ptr() for t in out]
    assert all(o % alignment == 0 for o in offsets)
    if alignment == 1:
        assert offsets == [0, 1, 4, 11, 111]


@pytest.mark.parametrize("background", [True, False])
def test_use_background_thread(background):
    batch = reference_like_batch(4)
    handle = mtc.start_copy(batch, "cuda", use_background_thread=background)
    assert_copied(handle.get(), batch, "cuda:0")


def test_the_copy_is_ordered_after_work_queued_on_the_current_stream():
    stream = torch.cuda.Stream()
    with torch.cuda.stream(stream):
        x = torch.zeros(1 << 20, device="cuda")
        torch.cuda._sleep(LONG_SLEEP_CYCLES)
        x.fill_(7)
        out = mtc.start_copy([x], "cpu").get()
    assert bool((out[0] == 7).all())


def test_dropping_an_unfinished_handle_waits_for_its_device_work():
    stream = torch.cuda.current_stream()
    torch.cuda._sleep(LONG_SLEEP_CYCLES)
    handle = mtc.start_copy(reference_like_batch(), "cuda")
    assert not handle.ready()
    del handle
    # The copy was queued behind the sleep: it has completed only if the sleep has.
    assert stream.query()


def test_ready_does_not_wait_for_a_thread_that_waits_in_get():
    import threading

    torch.cuda._sleep(4 * LONG_SLEEP_CYCLES)
    handle = mtc.start_copy(reference_like_batch(), "cuda")
    waiter = threading.Thread(target=handle.get)
    waiter.start()
    time.sleep(0.05)  # the waiter is in get(), waiting for the device
    start = time.perf_counter()
    answers = [handle.ready() for _ in range(10)]
    took = time.perf_counter() - start
    waiter.join()
    # ~0.5 s of device work was queued ahead of the copy; a ready() that waited for the lock
    # get() holds would have returned True after it.
    assert took < 0.05, f"ten ready() calls took {took * 1e3:.0f} ms beside a waiting get()"
    assert not any(answers)
    assert handle.ready()


def test_get_lets_other_threads_run_while_the_device_works():
    torch.cuda._sleep(LONG_SLEEP_CYCLES)
    handle = mtc.start_copy(reference_like_batch(), "cuda")
    with ProgressWatcher() as watcher:
        start = time.perf_counter()
        handle.get()
        end = time.perf_counter()
    assert watcher.coverage(start, end) >= 0.5, f"get() took {(end - start) * 1e3:.0f} ms"


def test_many_threads_copying_to_the_gpu_at_once():
    def worker(_):
        for _ in range(20):
            batch = reference_like_batch(2)
            assert_copied(mtc.start_copy(batch, "cuda").get(), batch, "cuda:0")

    errors = errors_in_threads(worker, 8)
    assert not errors, errors[0]


def test_a_gpu_that_does_not_exist():
    count = torch.cuda.device_count()
    with pytest.raises(ValueError, match="does not exist"):
        mtc.start_copy([torch.ones(1)], f"cuda:{count}")


def test_a_copy_between_cpus_makes_no_cuda_context():
    # In a fresh interpreter: the driver says which devices' primary contexts are active, first
    # after a CPU->CPU copy (the engine must make none then), then after a CPU->GPU copy to device
    # 0 (which shows the probe sees one).
    code = """
import ctypes
import torch
import mtc

driver = ctypes.CDLL("libcuda.so.1")

def contexts_active():
    count = ctypes.c_int()
    assert driver.cuInit(0) == 0 and driver.cuDeviceGetCount(ctypes.byref(count)) == 0
    states = ""
    for index in range(count.value):
        device, flags, active = ctypes.c_int(), ctypes.c_uint(), ctypes.c_int()
        assert driver.cuDeviceGet(ctypes.byref(device), index) == 0
        assert driver.cuDevicePrimaryCtxGetState(device, ctypes.byref(flags), ctypes.byref(active)) == 0
        states += str(active.value)
    return states

batch = {"a": [torch.ones(3), torch.zeros(2, 2)], "b": torch.arange(5)}
mtc.start_copy(batch, "cpu").get()
print(contexts_active())
mtc.start_copy(batch, "cuda:0").get()
print(contexts_active()[0])
"""
    after_cpu_copy, device_0_after_gpu_copy = printed_by(code)
    assert set(after_cpu_copy) == {"0"}, f"contexts after a copy between CPUs, by device: {after_cpu_copy}"
    assert device_0_after_gpu_copy == "1"
