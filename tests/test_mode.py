"""Grad mode and anomaly mode (tinygrad_ops/mode.py): thread-local, as PyTorch's."""

import threading

import numpy as np
import pytest

import tinygrad_ops as tg
from tinygrad_ops.scheduler import calibration


def run_in_thread(function):
    """Run `function` in a new thread and return its result (re-raising its error)."""
    outcome = {}

    def target():
        try:
            outcome["value"] = function()
        except BaseException as error:  # handed back to the caller below
            outcome["error"] = error

    thread = threading.Thread(target=target)
    thread.start()
    thread.join()
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def test_no_grad_in_one_thread_leaves_other_threads_recording():
    x = tg.Tensor([1.0, 2.0], requires_grad=True)
    with tg.no_grad():
        assert run_in_thread(tg.is_grad_enabled)
        y = run_in_thread(lambda: x * 3)
    assert y.requires_grad
    y.sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [3.0, 3.0])


def test_overlapping_no_grad_blocks_in_two_threads_restore_each_thread():
    # Thread A enters no_grad, then B enters, A leaves, B leaves: with one process-wide
    # switch, A's exit restored "on" under B, and B's exit restored "off" for everyone.
    a_entered, b_entered, a_left = threading.Event(), threading.Event(), threading.Event()
    seen = {}

    def thread_a():
        with tg.no_grad():
            a_entered.set()
            b_entered.wait()
        a_left.set()
        seen["a after"] = tg.is_grad_enabled()

    def thread_b():
        a_entered.wait()
        with tg.no_grad():
            b_entered.set()
            a_left.wait()
            seen["b inside, after a left"] = tg.is_grad_enabled()
        seen["b after"] = tg.is_grad_enabled()

    threads = [threading.Thread(target=thread_a), threading.Thread(target=thread_b)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert seen == {"a after": True, "b inside, after a left": False, "b after": True}
    assert tg.is_grad_enabled()


def test_anomaly_mode_is_thread_local():
    with tg.detect_anomaly():
        x = tg.Tensor([0.0], requires_grad=True)

        def backward_elsewhere():
            x.sqrt().sum().backward()  # inf gradient: no anomaly check in this thread
            return x.grad.numpy()

        assert np.isinf(run_in_thread(backward_elsewhere)[0])
        with pytest.raises(RuntimeError, match="returned inf or nan"):
            x.sqrt().sum().backward()


@pytest.fixture
def fresh_calibration(monkeypatch):
    """The auto scheduler as on its first use in a process (nothing calibrated yet)."""
    monkeypatch.setattr(calibration, "_CALIBRATION", {})


def chain_loss():
    x = tg.Tensor(np.linspace(-1, 1, 4).reshape(2, 2), requires_grad=True)
    y = x
    for _ in range(3):
        y = (y * 0.5).tanh()
    return x, y.sum()


def test_auto_scheduler_calibrates_under_no_grad(fresh_calibration):
    x, loss = chain_loss()
    with tg.no_grad():
        loss.backward(scheduler="auto")
    expected_x, expected_loss = chain_loss()
    expected_loss.backward()
    np.testing.assert_allclose(x.grad.numpy(), expected_x.grad.numpy(), rtol=1e-6)


def test_auto_scheduler_calibrates_in_another_thread_under_no_grad(fresh_calibration):
    x, loss = chain_loss()

    def backward_without_grad_mode():
        with tg.no_grad():
            loss.backward(scheduler="auto")

    run_in_thread(backward_without_grad_mode)
    assert x.grad is not None
    assert np.all(np.isfinite(x.grad.numpy()))


# -- anomaly mode -------------------------------------------------------------------------------


def make_nan_gradient(x):
    return (x.sqrt() * 0).sum()  # d sqrt at 0 is inf; times the 0 upstream gives NaN


def test_detect_anomaly_names_the_op_and_the_forward_line():
    x = tg.Tensor([0.0, 1.0], requires_grad=True)
    with tg.detect_anomaly():
        loss = make_nan_gradient(x)
        with pytest.raises(RuntimeError, match="Sqrt") as error:
            loss.backward()
    message = str(error.value)
    assert "make_nan_gradient" in message
    assert "test_mode.py" in message
    assert "x.sqrt()" in message


def test_detect_anomaly_catches_inf():
    x = tg.Tensor([0.0], requires_grad=True)
    with tg.detect_anomaly():
        loss = x.sqrt().sum()
        with pytest.raises(RuntimeError, match="Sqrt"):
            loss.backward()


def test_without_anomaly_mode_nan_gradients_pass_silently():
    x = tg.Tensor([0.0, 1.0], requires_grad=True)
    make_nan_gradient(x).backward()
    assert np.isnan(x.grad.numpy()[0])


def test_detect_anomaly_restores_the_previous_mode():
    x = tg.Tensor([0.0], requires_grad=True)
    with pytest.raises(RuntimeError), tg.detect_anomaly():
        x.sqrt().sum().backward()
    loss = x.sqrt().sum()
    loss.backward()
    assert np.isinf(x.grad.numpy()[0])


# -- grad mode ----------------------------------------------------------------------------------


def test_no_grad_context_records_nothing():
    x = tg.Tensor([1.0], requires_grad=True)
    with tg.no_grad():
        assert not tg.is_grad_enabled()
        y = x * 2
        assert not y.requires_grad
        assert y.is_leaf
    assert tg.is_grad_enabled()
    assert (x * 2).requires_grad


def test_no_grad_and_enable_grad_as_decorators():
    @tg.no_grad()
    def without(t):
        return t * 2

    @tg.enable_grad()
    def with_grad(t):
        return t * 2

    x = tg.Tensor([1.0], requires_grad=True)
    assert not without(x).requires_grad
    with tg.no_grad():
        assert with_grad(x).requires_grad
        assert not tg.is_grad_enabled()
    assert without.__name__ == "without"


def test_enable_grad_nested_in_no_grad():
    x = tg.Tensor([1.0], requires_grad=True)
    with tg.no_grad():
        with tg.enable_grad():
            assert (x * 2).requires_grad
        assert not (x * 2).requires_grad


def test_grad_mode_is_restored_after_an_exception():
    with pytest.raises(ValueError, match="boom"), tg.no_grad():
        raise ValueError("boom")
    assert tg.is_grad_enabled()

    @tg.no_grad()
    def failing():
        raise ValueError("boom")

    with pytest.raises(ValueError, match="boom"):
        failing()
    assert tg.is_grad_enabled()


def test_set_grad_enabled_as_a_call_a_block_and_a_decorator_as_torch():
    x = tg.Tensor([1.0], requires_grad=True)
    try:
        tg.set_grad_enabled(False)  # at once, as torch.set_grad_enabled(False)
        assert not (x * 2).requires_grad
    finally:
        tg.set_grad_enabled(True)
    assert (x * 2).requires_grad
    with tg.set_grad_enabled(False):
        assert not (x * 2).requires_grad
    assert tg.is_grad_enabled()

    @tg.set_grad_enabled(False)
    def evaluate():
        return (x * 2).requires_grad

    assert tg.is_grad_enabled()  # decorating changes nothing outside the function
    assert evaluate() is False
    assert tg.is_grad_enabled()
    with pytest.raises(TypeError, match="set_grad_enabled: mode must be a bool"):
        tg.set_grad_enabled(None)


def test_set_grad_enabled_in_one_thread_leaves_the_others_recording():
    seen = []
    stopped = threading.Event()

    def evaluator():
        tg.set_grad_enabled(False)
        stopped.set()

    thread = threading.Thread(target=evaluator)
    thread.start()
    thread.join()
    assert stopped.is_set()
    seen.append((tg.Tensor([1.0], requires_grad=True) * 2).requires_grad)
    assert seen == [True]


def test_inference_mode_records_nothing_and_takes_a_mode():
    x = tg.Tensor([1.0], requires_grad=True)
    with tg.inference_mode():
        assert not (x * 2).requires_grad
    with tg.inference_mode(False):
        assert (x * 2).requires_grad

    @tg.inference_mode()
    def evaluate():
        return (x * 2).requires_grad

    assert evaluate() is False
    assert tg.is_grad_enabled()

    @tg.inference_mode(False)
    def train_step():
        return (x * 2).requires_grad

    with tg.no_grad():
        assert train_step() is True  # its own mode, not inference_mode()'s default
