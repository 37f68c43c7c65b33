"""tf.data's pipeline paths on the CPU: each mode builds the pipeline it names and delivers its batches
in order, a dropped or repeated batch fails the point by name, and --overlap's kernel runs beside it."""

import gc
import importlib.util
import weakref

import pytest

from conftest import FAST
from xferbench.measuring.backends import BACKENDS
from xferbench.core.errors import VerificationError
from xferbench.measuring.measure import measure_point
from xferbench.measuring.backends.pipeline import BUFFER_BATCHES
from xferbench.core.spec import PIPELINE_MODES, SeriesKey

HAS_TF = importlib.util.find_spec("tensorflow") is not None
pytestmark = pytest.mark.skipif(not HAS_TF, reason="TensorFlow not installed (pip install 'xferbench[tf]')")
SHAPE = (8, 8, 3)
MODES = PIPELINE_MODES["tf"]
# The dataset each mode builds, outermost first, as TensorFlow 2.21 names its classes.
SLICED = ["_BatchDataset", "_RepeatDataset", "_TensorSliceDataset"]
TO_DEVICE = ["_PrefetchDataset", "_CopyToDeviceDataset"]
CHAINS = {
    "dataset": SLICED,
    "prefetch_to_device": TO_DEVICE + SLICED,
    "copy_to_device": TO_DEVICE + SLICED,
    "generator": TO_DEVICE + ["_BatchDataset", "_FlatMapDataset", "_TensorDataset"],  # from_generator's own chain
}


def key(mode: str, device: str = "cpu", op: str = "copy") -> SeriesKey:
    return SeriesKey("tf", mode, op, device, SHAPE)


def point(mode: str, batch_size: int, params: dict | None = None):
    return measure_point(BACKENDS["tf"], key(mode).at(batch_size), params or {}, FAST)


def chain(dataset) -> list[str]:
    names = []
    while dataset is not None:
        names.append(type(dataset).__name__)
        dataset = getattr(dataset, "_input_dataset", None)
    return names


@pytest.mark.parametrize("mode", MODES)
def test_each_mode_delivers_its_batches_in_order_and_says_what_it_copies(mode) -> None:
    for batch_size in (1, 3):
        measured = point(mode, batch_size)
        assert measured.status == "ok", measured.error  # both checks of the sequence passed, before and after sampling
        # every batch taken: warm-up, the two checks and the samples
        depth = 4 * BUFFER_BATCHES  # each check drains what the pipeline made ready meanwhile
        assert measured.transfers == measured.warmup_calls + 2 * (1 + depth) + len(measured.times_s)
        assert measured.verify_s > 0 and measured.mbps > 0
    transfer = BACKENDS["tf"].prepare(key(mode).at(3), {})
    try:
        assert chain(transfer.dataset) == CHAINS[mode]
    finally:
        transfer.close()
    info = BACKENDS["tf"].describe(key(mode), {})
    assert info.transfer == "host-to-host" and info.sync.startswith("none needed")
    assert info.clock.startswith("time.perf_counter, around taking the next batch")
    assert info.params["tf_device"] == "/CPU:0" and info.params["dataset_items"].startswith("2b+1")
    said = {
        "dataset": ["from_tensor_slices(items).repeat().batch(b)", "tf.identity under tf.device('/CPU:0') returns the"
                    " iterator's batch", "the batch op's copy is the host copy timed", "inject_prefetch"],
        "prefetch_to_device": [f"prefetch_to_device('/CPU:0', {BUFFER_BATCHES})", "is copy_to_device(target) then prefetch(n)"],
        "copy_to_device": [f"copy_to_device('/CPU:0') and prefetch({BUFFER_BATCHES})", "builds exactly what prefetch_to_device"],
        "generator": ["from_generator over the items", "'does not do anything'"],
    }[mode]
    for words in said:
        assert words in info.note


def test_the_modes_that_copy_inside_the_pipeline_say_how_on_a_gpu(monkeypatch) -> None:
    from xferbench.measuring.backends import tensorflow as backend

    monkeypatch.setattr(backend, "device_name", lambda device: "NVIDIA H100 80GB HBM3")
    for mode in MODES:
        info = BACKENDS["tf"].describe(key(mode, "cuda:1"), {})
        assert info.transfer == "host-to-device" and info.sync == backend.PIPELINE_GPU_SYNC
        assert info.params["tf_device"] == "/GPU:1"
        assert (backend.PINNED_FINDING in info.note) == (mode != "dataset")
        assert (backend.COPY_TO_DEVICE in info.note) == (mode != "dataset")
        assert backend.METAL_UNKNOWN not in info.note
    assert "tf.identity under tf.device('/GPU:1') copies it to the device" in BACKENDS["tf"].describe(key("dataset", "cuda:1"), {}).note
    assert backend.METAL_UNKNOWN in BACKENDS["tf"].describe(key("prefetch_to_device", "mps"), {}).note


def plant(monkeypatch, fault: str) -> None:
    """Once the samples have begun, drop a batch (take it and throw it away) or repeat one (hand the
    last one back without taking the next)."""
    from xferbench.measuring.backends.tensorflow import TFPipeline

    original = TFPipeline._deliver

    def faulty(self):
        if self.delivered == FAST.warmup_calls + 2 and not getattr(self, "planted", False):  # warm-up, a check, a sample
            self.planted = True
            if fault == "repeated":
                return self.last
            original(self)
        self.last = original(self)
        return self.last

    monkeypatch.setattr(TFPipeline, "_deliver", faulty)


@pytest.mark.parametrize("mode", ["dataset", "generator"])
@pytest.mark.parametrize("fault", ["dropped", "repeated"])
def test_a_batch_dropped_or_repeated_while_sampled_fails_the_point_by_name(monkeypatch, mode, fault) -> None:
    plant(monkeypatch, fault)
    measured = point(mode, 3)
    assert measured.status == "error"
    assert measured.error.startswith("verification failed") and f"1 batch(es) {fault}" in measured.error


def test_a_batch_delivered_elsewhere_than_the_target_fails_the_check() -> None:
    transfer = BACKENDS["tf"].prepare(key("prefetch_to_device").at(2), {})
    try:
        transfer.verify()
        transfer.target = "/CPU:1"  # where the series would say its batches go; they stay on /CPU:0
        with pytest.raises(VerificationError, match="is on .*CPU:0, not on /CPU:1"):
            transfer.verify()
    finally:
        transfer.close()


def test_overlap_records_the_kernel_alone_and_in_each_step() -> None:
    measured = point("prefetch_to_device", 3, {"overlap": True})
    assert measured.status == "ok", measured.error
    compute = measured.compute
    assert compute["kernel"] == "float32 128x128 matmul" and compute["repeats"] >= 1
    for name in ("compute_times_s", "step_times_s"):
        assert len(compute[name]) >= FAST.min_samples and all(t > 0 for t in compute[name])
    assert point("prefetch_to_device", 3).compute is None


def test_the_kernel_runs_its_repeats_on_the_target_fed_by_the_batch(monkeypatch) -> None:
    from xferbench.measuring.backends.tensorflow import _tf

    tf = _tf()
    transfer = BACKENDS["tf"].prepare(key("dataset").at(3), {})
    try:
        products, cast = [], tf.cast
        monkeypatch.setattr(tf, "matmul", lambda a, b: products.append(a) or a)
        monkeypatch.setattr(tf, "cast", lambda x, dtype: products.append(x) or cast(x, dtype))
        transfer.repeats = 5
        transfer.compute_alone()
        assert len(products) == 6 and products[0].shape == (1,) and products[0].numpy()[0] == 0  # no batch: the same ops, fed by a resident zero
        products.clear()
        transfer.step()
        assert len(products) == 6 and products[0].shape == (1,) and products[1].device.endswith("CPU:0")  # the batch's first byte
        assert transfer.delivered == transfer.transfers == 1
    finally:
        transfer.close()


def test_the_dataset_modes_step_copies_each_batch_under_the_targets_scope(monkeypatch) -> None:
    from tensorflow.python.eager import context

    from xferbench.measuring.backends.tensorflow import _tf

    tf = _tf()
    scopes, identity = [], tf.identity
    for mode in MODES:
        monkeypatch.setattr(tf, "identity", identity)  # preparing copies the kernel's matrix: only the steps count
        transfer = BACKENDS["tf"].prepare(key(mode).at(2), {})
        monkeypatch.setattr(tf, "identity", lambda x: scopes.append(context.context().device_name) or identity(x))
        try:
            transfer()
            transfer.verify()
        finally:
            transfer.close()
        delivered = 2 + 4 * BUFFER_BATCHES  # a call, then a check and the batches it drains
        expected = ["/job:localhost/replica:0/task:0/device:CPU:0"] * delivered if mode == "dataset" else []
        assert scopes == expected, mode  # the other modes' batches are on the target already
        scopes.clear()


def test_a_generator_pipeline_frees_its_items_once_closed() -> None:
    """from_generator's py_func outlives its dataset in eager mode: its generator must not keep the items."""
    transfer = BACKENDS["tf"].prepare(key("generator").at(64), {})
    items = weakref.ref(transfer.items)
    transfer.verify()
    transfer.close()
    del transfer
    gc.collect()
    assert items() is None


def test_pipeline_modes_take_only_the_copy_op_and_leave_the_default_sweep_alone() -> None:
    backend = BACKENDS["tf"]
    assert backend.default_modes == ("eager", "function", "jit") and backend.chosen_modes() == backend.default_modes
    assert set(MODES) <= set(backend.modes)
    for mode in MODES:
        assert backend.sources(mode) == ("numpy",)
        assert backend.skip_reason(key(mode)) is None
        assert backend.skip_reason(key(mode, "mps")) is None  # let run: a batch that lands elsewhere fails the check
        reason = backend.skip_reason(key(mode, op="seed"))
        assert reason and reason.startswith("a pipeline series times the batches the pipeline delivers; the seed op")
    assert backend.sources("eager") == ("numpy", "aligned") and backend.skip_reason(key("eager", op="seed")) is None
    spec = key("dataset").at(4)
    items = 9 * spec.nbytes // 4
    assert backend.host_bytes(spec) >= 2 * items + (BUFFER_BATCHES + 2) * spec.nbytes
    assert backend.host_bytes(key("generator").at(4)) == backend.host_bytes(spec) - items  # no tensor of all the items
