"""Mistakes become Python exceptions naming the Python line and the numbers that
disagree; the interpreter process survives every one of them."""

import os

import numpy as np
import pytest

import tilejit as tj


def line_of(marker):
    """The line of this file holding `marker` (kept out of the asserted code)."""
    with open(__file__) as source:
        lines = source.read().splitlines()
    for number, text in enumerate(lines, 1):
        if marker in text and "line_of(" not in text:
            return number
    raise AssertionError(marker)


def test_shape_mistake_names_the_python_line():
    k = tj.Kernel("bad_shapes")
    x = k.ptr_param("x", tj.f32)
    a = tj.load(x + tj.arange(0, 128))
    b = tj.load(x + tj.arange(0, 64))
    bad = a + b  # MARK-broadcast
    assert not bad.valid
    with pytest.raises(tj.BuildError) as info:
        k.finish()
    text = str(info.value)
    assert f"{os.path.basename(__file__)}:{line_of('MARK-broadcast')}:" in text
    assert "shapes do not broadcast in '+': tile<128xf32> vs tile<64xf32>" in text


def test_every_mistake_is_reported():
    k = tj.Kernel("two_mistakes")
    x = k.ptr_param("x", tj.f32)
    t = tj.load(x + tj.arange(0, 8))
    t + tj.arange(0, 4).to(tj.f32)  # MARK-first
    tj.sum(t, 3)  # MARK-second
    with pytest.raises(tj.BuildError) as info:
        k.finish()
    text = str(info.value)
    assert "has 2 error(s)" in text
    assert f":{line_of('MARK-first')}:" in text and f":{line_of('MARK-second')}:" in text


def test_one_kernel_at_a_time_and_no_use_after_finish():
    k = tj.Kernel("first")
    x = k.ptr_param("x", tj.f32)
    with pytest.raises(tj.BuildError, match="started while kernel 'first' is still being built"):
        tj.Kernel("second")
    tj.store(x + tj.arange(0, 4), 1.0)
    k.finish()
    with pytest.raises(tj.BuildError, match="kernel 'first' is finished"):
        x + 1
    with pytest.raises(tj.BuildError, match="no kernel is being built"):
        tj.program_id(0)


def test_values_outlive_neither_their_module_nor_a_failed_finish():
    # Issue #33: each of these read freed or erased IR (a crash of the process).
    import gc

    k = tj.Kernel("freed")
    x = k.ptr_param("x", tj.f32)
    v = x + tj.arange(0, 4)
    tj.store(v, 1.0)
    module = k.finish()
    del module
    gc.collect()
    for use in (lambda: v.shape, lambda: v.dtype, lambda: v.is_tile, lambda: v.valid,
                lambda: v.to(tj.f16)):
        with pytest.raises(tj.BuildError, match="kernel 'freed' is finished"):
            use()
    assert "finished kernel 'freed'" in repr(v)

    k = tj.Kernel("failed")
    x = k.ptr_param("x", tj.f32)
    w = tj.arange(0, 128) + tj.arange(0, 64)  # a shape mistake: finish() fails
    with pytest.raises(tj.BuildError):
        k.finish()
    with pytest.raises(tj.BuildError, match="kernel 'failed' is finished"):
        w.shape
    with pytest.raises(tj.BuildError, match="kernel 'failed' is finished"):
        x + 1


def test_finish_inside_a_body_is_refused_and_fails_the_kernel():
    for build in ("for_range", "if_then"):
        k = tj.Kernel("inside_" + build)
        x = k.ptr_param("x", tj.f32)

        def body(*_):
            k.finish()
            return [tj.zeros([4], tj.f32)]

        with pytest.raises(tj.BuildError, match="finish\\(\\) called inside a for_range or "
                                                "if_then body"):
            if build == "for_range":
                tj.for_range(0, 4, 1, [tj.zeros([4], tj.f32)], body)
            else:
                tj.if_then(tj.program_id(0) < 1, body)
        raised = "the loop body raised" if build == "for_range" else "the if_then body raised"
        with pytest.raises(tj.BuildError, match=raised):
            k.finish()
    # The kernel after them builds again: nothing of the failed ones is left current.
    k = tj.Kernel("after")
    x = k.ptr_param("x", tj.f32)
    tj.store(x + tj.arange(0, 4), 1.0)
    k.finish()


def test_a_raising_loop_body_propagates_and_fails_the_kernel():
    k = tj.Kernel("raising_loop")
    x = k.ptr_param("x", tj.f32)

    def body(i, carried):
        raise KeyError("from the body")

    with pytest.raises(KeyError, match="from the body"):
        tj.for_range(0, 4, 1, [tj.zeros([4], tj.f32)], body)
    with pytest.raises(tj.BuildError, match="the loop body raised"):
        k.finish()


def test_values_have_no_truth_value():
    k = tj.Kernel("truth")
    with pytest.raises(TypeError, match="no truth value"):
        if tj.program_id(0) < 3:
            pass
    k.finish()


def test_out_of_bounds_access_is_a_run_error_with_location():
    k = tj.Kernel("overrun")
    x = k.ptr_param("x", tj.f32)
    tj.store(x + tj.arange(0, 64), 2.0)  # MARK-store
    module = k.finish()
    with pytest.raises(tj.RunError) as info:
        module.run(1, np.zeros(32, np.float32))
    text = str(info.value)
    assert "program (0, 0, 0)" in text and "outside every buffer argument" in text
    # The op's location as MLIR prints it: loc("<file>":<line>:<column>).
    assert f'{os.path.basename(__file__)}":{line_of("MARK-store")}:' in text


def test_launch_arguments_are_checked():
    k = tj.Kernel("args")
    x = k.ptr_param("x", tj.bf16)
    n = k.scalar_param("n", tj.i32)
    tj.store(x + tj.arange(0, 4), tj.full([4], n, tj.i32).to(tj.bf16))
    module = k.finish()
    with pytest.raises(tj.ArgumentError, match=r"takes 2 argument\(s\) \(x: ptr<bf16>, n: i32\), got 1"):
        module.run(1, np.zeros(4, np.uint16))
    with pytest.raises(tj.ArgumentError, match=r"argument 0 \('x'\) expects uint16 elements "
                                               r"\(ptr<bf16>\), got float32"):
        module.run(1, np.zeros(4, np.float32), 3)
    with pytest.raises(tj.ArgumentError, match=r"argument 1 \('n'\) expects an integer"):
        module.run(1, np.zeros(4, np.uint16), 2.5)
    with pytest.raises(tj.ArgumentError, match="not C-contiguous"):
        module.run(1, np.zeros(8, np.uint16)[::2], 3)
    with pytest.raises(tj.RunError, match="= 4294967296"):
        module.run(1, np.zeros(4, np.uint16), 2**32)
    with pytest.raises(tj.ArgumentError, match="grid"):
        module.run((1, -1), np.zeros(4, np.uint16), 3)


def test_read_only_arrays_refuse_stores():
    k = tj.Kernel("writer")
    x = k.ptr_param("x", tj.f32)
    tj.store(x + tj.arange(0, 4), 1.0)
    module = k.finish()
    frozen = np.zeros(4, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(tj.RunError, match="read-only"):
        module.run(1, frozen)
    assert (frozen == 0).all()


def test_unknown_arch_and_registered_constants():
    module = tj.kernels.gated_rmsnorm.build()
    with pytest.raises(tj.ArgumentError, match="sm_91"):
        module.compile("sm_91")
    with pytest.raises(tj.ArgumentError, match="no_such_constant"):
        tj.kernels.gated_rmsnorm.build(no_such_constant=3)
    with pytest.raises(AttributeError, match="no registered kernel 'nope'"):
        tj.kernels.nope


def test_registered_kernels_check_array_shapes_before_running():
    # gated_rmsnorm declares y, out [rows, width], z [rows, z_stride], weight [width].
    module = tj.kernels.gated_rmsnorm.build(width=64, group_size=32)
    assert [p.shape for p in module.params[:4]] == [["rows", 64], ["rows", 64], [64],
                                                   ["rows", 64]]
    rows = 3
    y = np.zeros((rows, 64), np.uint16)
    w = np.ones(64, np.uint16)
    out = np.full((rows, 64), 0x7FC1, np.uint16)
    # A correct launch runs (the shapes are not in the way).
    module.run((rows, 2), y, y.copy(), w, out, rows, 1e-5)
    assert (out == 0).all()
    # A wrong column count, a row count that disagrees with the `rows`
    # argument, a flattened array, and a weight of the wrong length: each
    # refused before anything runs, naming the argument and both shapes.
    for args, message in [
        ((np.zeros((rows, 63), np.uint16), y, w, out, rows),
         r"argument 0 \('y'\) has shape \(3, 63\), expected \(rows=3, 64\)"),
        ((y, y, w, out, 2), r"argument 0 \('y'\) has shape \(3, 64\), expected \(rows=2, 64\)"),
        ((y, y.reshape(-1), w, out, rows),
         r"argument 1 \('z'\) has shape \(192,\), expected \(rows=3, 64\)"),
        ((y, y, np.ones(32, np.uint16), out, rows),
         r"argument 2 \('weight'\) has shape \(32,\), expected \(64\)"),
    ]:
        before = out.copy()
        with pytest.raises(tj.ArgumentError, match=message):
            module.run((rows, 2), *args, 1e-5)
        assert (out == before).all()
    # '?' accepts any size: conv_update's page holds any number of slots.
    conv = tj.kernels.conv_update.build(channels=256)
    assert [p.shape for p in conv.params][:2] == [["?", 256], ["?", 256, 3]]
