"""tg.compile used as a careless user would: each loop gives, compiled, the eager numbers
bit for bit, or is refused at capture with an error naming the user's line."""

import numpy as np
import pytest

import tinygrad_ops as tg
from tinygrad_ops import functional as F  # noqa: N812 (the PyTorch convention)
from tinygrad_ops import optim

CALLS = 8


def outcome(scenario):
    """Run `scenario(compile)` eagerly and compiled: "equal", or the refusal's message.
    A scenario returns the arrays it wants compared (after every call)."""
    eager = scenario(lambda function: function)
    try:
        compiled = scenario(tg.compile)
    except tg.CompileError as error:
        message = str(error)
        assert __file__ in message, message  # the user's line is named
        return message
    assert len(eager) == len(compiled)
    for number, (expected, got) in enumerate(zip(eager, compiled)):
        assert expected.dtype == got.dtype, number
        np.testing.assert_array_equal(expected, got, err_msg=f"array {number}")
    return "equal"


def linear_model(seed=0):
    tg.manual_seed(seed)
    return tg.nn.Sequential(tg.nn.Linear(4, 6), tg.nn.Tanh(), tg.nn.Linear(6, 3))


def data(count=CALLS, seed=1):
    generator = np.random.default_rng(seed)
    return [
        (
            tg.Tensor(generator.standard_normal((5, 4)).astype(np.float32)),
            generator.integers(0, 3, 5),
        )
        for _ in range(count)
    ]


def weights_of(model):
    return [parameter.data.copy() for parameter in model.parameters()]


def test_clip_grad_norm_takes_each_call_s_norm():
    def scenario(compile):
        w = tg.Tensor([[1.0, -2.0]], requires_grad=True)
        optimizer = optim.SGD([w], lr=1.0)

        @compile
        def step(x):
            optimizer.zero_grad()
            (w * x).sum().backward()
            tg.nn.utils.clip_grad_norm_([w], 1.0)
            optimizer.step()

        out = []
        for scale in (1.0, 10.0, 100.0, 0.01, 3.0):
            step(tg.Tensor([[scale, scale * 0.5]]))
            out.append(w.data.copy())
        return out

    assert outcome(scenario) == "equal"


@pytest.mark.parametrize("make", [lambda p: optim.SGD(p, lr=0.1), lambda p: optim.Adam(p)])
def test_scaling_the_grad_before_the_step(make):
    def scenario(compile):
        model = linear_model()
        optimizer = make(model.parameters())

        @compile
        def step(x, y):
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            for parameter in model.parameters():
                parameter.grad = parameter.grad * 0.5
            optimizer.step()

        out = []
        for x, y in data():
            step(x, y)
            out += weights_of(model)
        return out

    assert outcome(scenario) == "equal"


@pytest.mark.parametrize("kind", [float, np.float64, np.array, tg.Tensor])
def test_learning_rate_as_an_argument(kind):
    def scenario(compile):
        model = linear_model()
        optimizer = optim.SGD(model.parameters(), lr=0.1)

        @compile
        def step(x, y, lr):
            for group in optimizer.param_groups:
                group["lr"] = lr if kind is not tg.Tensor else lr.item()
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()

        out = []
        for number, (x, y) in enumerate(data()):
            step(x, y, kind(0.5 / (number + 1)))
            out += weights_of(model)
        return out

    result = outcome(scenario)
    if kind is np.array:  # an array argument: each call's own, written in by a kernel
        assert result == "equal"
    elif kind is tg.Tensor:  # .item() of an argument, refused at the capture
        assert ".item()" in result
    else:  # a Python number: one program per value, then a refusal that says what to do
        assert "as a Tensor argument" in result


@pytest.mark.parametrize("draw", [tg.randn, tg.rand])
def test_random_tensors_inside_the_step(draw):
    def scenario(compile):
        model = linear_model()
        optimizer = optim.SGD(model.parameters(), lr=0.1)

        @compile
        def step(x, y):
            optimizer.zero_grad()
            noise = draw(*x.shape)
            F.cross_entropy(model(x + noise), y).backward()
            optimizer.step()

        tg.manual_seed(7)
        out = []
        for x, y in data():
            step(x, y)
            out += weights_of(model)
        return out

    assert "random numbers drawn outside the ops" in outcome(scenario)


def test_manual_seed_inside_the_step():
    def scenario(compile):
        model = linear_model()

        @compile
        def step(x):
            tg.manual_seed(0)
            return F.dropout(model(x), 0.5)

        return [step(x).data.copy() for x, _ in data()]

    assert "tg.manual_seed inside the function" in outcome(scenario)


def test_a_list_argument_refilled():
    def scenario(compile):
        model = linear_model()
        optimizer = optim.SGD(model.parameters(), lr=0.1)

        @compile
        def step(batch):
            optimizer.zero_grad()
            F.cross_entropy(model(batch[0]), batch[1]).backward()
            optimizer.step()

        batch = []
        out = []
        for x, y in data():
            batch[:] = [x, tg.Tensor(y)]
            step(batch)
            out += weights_of(model)
        return out

    assert outcome(scenario) == "equal"


@pytest.mark.parametrize("container", ["tuple", "dict"])
def test_a_tuple_or_dict_batch(container):
    def scenario(compile):
        model = linear_model()
        optimizer = optim.SGD(model.parameters(), lr=0.1)

        @compile
        def step(batch):
            x, y = (batch["x"], batch["y"]) if container == "dict" else batch
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()

        out = []
        for x, y in data():
            step({"x": x, "y": tg.Tensor(y)} if container == "dict" else (x, tg.Tensor(y)))
            out += weights_of(model)
        return out

    assert outcome(scenario) == "equal"


def test_a_replaced_attribute_submodule():
    class Net(tg.nn.Module):
        def __init__(self):
            super().__init__()
            self.body = tg.nn.Linear(4, 6)
            self.head = tg.nn.Linear(6, 3)

        def forward(self, x):
            return self.head(self.body(x).tanh())

    def scenario(compile):
        tg.manual_seed(0)
        model = Net()

        @compile
        def step(x):
            return model(x)

        out = []
        for number, (x, _) in enumerate(data()):
            if number == 3:
                model.head = tg.nn.Linear(6, 3)
            out.append(step(x).data.copy())
        return out

    assert outcome(scenario) == "equal"


def test_an_optimizer_or_a_model_rebound_under_the_same_name():
    def scenario(compile):
        model = linear_model()
        optimizer = optim.SGD(model.parameters(), lr=0.1)

        @compile
        def step(x, y):
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()

        out = []
        for number, (x, y) in enumerate(data()):
            if number == 3:
                optimizer = optim.Adam(model.parameters(), lr=0.01)
            if number == 5:
                model = linear_model(seed=2)
                optimizer = optim.SGD(model.parameters(), lr=0.2)
            step(x, y)
            out += weights_of(model)
        return out

    assert outcome(scenario) == "equal"


OPTIMIZER = {}


def test_a_global_optimizer_rebound():
    model = linear_model()
    OPTIMIZER["now"] = optim.SGD(model.parameters(), lr=0.1)
    global optimizer_in_use
    optimizer_in_use = OPTIMIZER["now"]

    @tg.compile
    def step(x, y):
        optimizer_in_use.zero_grad()
        F.cross_entropy(model(x), y).backward()
        optimizer_in_use.step()

    for x, y in data(3):
        step(x, y)
    optimizer_in_use = optim.SGD(model.parameters(), lr=0.5)
    before = weights_of(model)
    x, y = data(1, seed=4)[0]
    step(x, y)  # the new optimizer's lr: a new program
    manual = [w - 0.5 * p.grad.data for w, p in zip(before, model.parameters())]
    for got, expected in zip(weights_of(model), manual):
        np.testing.assert_array_equal(got, expected)


def test_batch_norm_statistics_reset_through_data():
    def scenario(compile):
        tg.manual_seed(0)
        model = tg.nn.Sequential(tg.nn.Linear(4, 6), tg.nn.BatchNorm1d(6), tg.nn.Linear(6, 3))
        optimizer = optim.SGD(model.parameters(), lr=0.1)
        norm = model[1]

        @compile
        def step(x, y):
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()

        out = []
        for number, (x, y) in enumerate(data()):
            if number == 4:
                norm.running_mean.data = np.zeros(6, np.float32)
                norm.running_var.data = np.ones(6, np.float32)
            step(x, y)
            out += weights_of(model) + [norm.running_mean.data.copy()]
        return out

    assert outcome(scenario) == "equal"


def test_detect_anomaly_around_the_call():
    def scenario(compile):
        w = tg.Tensor([1.0, 2.0], requires_grad=True)
        optimizer = optim.SGD([w], lr=0.01)

        @compile
        def step(x):
            optimizer.zero_grad()
            (w * x).sqrt().sum().backward()
            optimizer.step()

        out = []
        for value in (1.0, 2.0, 3.0, 0.0):
            with tg.detect_anomaly():
                try:
                    step(tg.Tensor([value, value]))
                except RuntimeError as error:
                    out.append(np.array("Sqrt" in str(error)))
            out.append(w.data.copy())
        return out

    # (the last call: w * 0 is 0, sqrt's gradient there is inf: eager raises)
    assert outcome(scenario) == "equal"


@pytest.mark.parametrize("mode", ["train", "eval"])
def test_train_or_eval_at_the_top_of_the_step(mode):
    def scenario(compile):
        tg.manual_seed(0)
        model = tg.nn.Sequential(tg.nn.Linear(4, 6), tg.nn.Dropout(0.3), tg.nn.Linear(6, 3))
        optimizer = optim.SGD(model.parameters(), lr=0.1)

        @compile
        def step(x, y):
            model.train() if mode == "train" else model.eval()
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()

        @compile
        def evaluate(x):
            model.eval()
            return model(x)

        tg.manual_seed(3)
        out = []
        for x, y in data(12):
            step(x, y)
            out.append(evaluate(x).data.copy())
            out += weights_of(model)
        return out

    assert outcome(scenario) == "equal"


def test_a_learning_rate_decayed_by_hand_inside_the_step():
    def scenario(compile):
        model = linear_model()
        optimizer = optim.SGD(model.parameters(), lr=0.5)

        @compile
        def step(x, y):
            optimizer.zero_grad()
            F.cross_entropy(model(x), y).backward()
            optimizer.step()
            optimizer.param_groups[0]["lr"] *= 0.5  # (eagerly: halved at every call)

        out = []
        for x, y in data():
            step(x, y)
            out += weights_of(model)
        return out

    assert "param_groups" in outcome(scenario)


def test_a_layer_setting_changed_between_calls():
    def scenario(compile):
        tg.manual_seed(0)
        model = tg.nn.Sequential(tg.nn.Linear(4, 6), tg.nn.Dropout(0.5), tg.nn.Linear(6, 3))

        @compile
        def step(x):
            return model(x)

        out = []
        tg.manual_seed(1)
        for number, (x, _) in enumerate(data()):
            model[1].p = 0.1 * (number % 3)
            out.append(step(x).data.copy())
        return out

    assert outcome(scenario) == "equal"


@pytest.mark.parametrize("update", ["sub_", "optimizer"])
def test_grads_set_to_none_by_hand_at_the_top_of_the_step(update):
    # `p.grad = None` in place of zero_grad(): replayed as the step's first kernels, so one
    # program serves every call (no re-capture at each call, no refusal at the fifth).
    def scenario(compile):
        model = linear_model()
        parameters = list(model.parameters())
        optimizer = optim.Adam(parameters, lr=0.01)

        @compile
        def step(x, y):
            for parameter in parameters:
                parameter.grad = None
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            if update == "optimizer":
                optimizer.step()
            else:
                with tg.no_grad():
                    for parameter in parameters:
                        parameter.sub_(0.1 * parameter.grad)
            return loss

        out = []
        for x, y in data():
            out.append(step(x, tg.Tensor(y)).data.copy())
            out.extend(weights_of(model))
            out.extend(parameter.grad.data.copy() for parameter in parameters)
        if hasattr(step, "programs"):  # (compiled)
            assert len(step.programs) <= 2, step.programs  # (one for .grad None, one for set)
        return out

    assert outcome(scenario) == "equal"


@pytest.mark.parametrize("where", ["closure", "method"])
def test_the_previous_calls_gradient_read_at_the_top_of_the_step(where):
    # `p.grad = p.grad * 0.5` before the forward (a decayed accumulation) reads the .grad
    # the call begins with: a replay reads it again, not the first call's tensor.
    def scenario(compile):
        model = linear_model()
        optimizer = optim.SGD(model.parameters(), lr=0.1)

        def body(x, y):
            for parameter in model.parameters():
                if parameter.grad is not None:
                    parameter.grad = parameter.grad * 0.5
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            return loss

        class Trainer:
            def __init__(self):
                self.model, self.optimizer = model, optimizer

            @compile
            def step(self, x, y):
                for parameter in self.model.parameters():
                    if parameter.grad is not None:
                        parameter.grad = parameter.grad * 0.5
                loss = F.cross_entropy(self.model(x), y)
                loss.backward()
                self.optimizer.step()
                return loss

        step = compile(body) if where == "closure" else Trainer().step
        out = []
        for x, y in data():
            out.append(step(x, tg.Tensor(y)).data.copy())
            out.extend(weights_of(model))
            out.extend(parameter.grad.data.copy() for parameter in model.parameters())
        return out

    assert outcome(scenario) == "equal"


def test_the_previous_calls_gradient_of_a_leaf_tensor():
    def scenario(compile):
        w = tg.Tensor(np.array([1.0, -2.0, 0.5]), requires_grad=True)

        @compile
        def step(x):
            if w.grad is not None:
                w.grad = w.grad * 0.5
            loss = (w * x).sum() ** 2
            loss.backward()
            with tg.no_grad():
                w.sub_(0.01 * w.grad)
            return loss

        out = []
        for number in range(CALLS):
            out.append(step(tg.Tensor(np.arange(3.0) + number)).data.copy())
            out.extend([w.data.copy(), w.grad.data.copy()])
        return out

    assert outcome(scenario) == "equal"


@pytest.mark.parametrize("reset", ["zero_grad", "set_to_none_by_hand"])
def test_a_branch_on_the_previous_grad_before_zero_grad(reset):
    # The first call finds no .grad, every later call the previous one's: the step's
    # Python branches on it before zero_grad() resets it, so a replay of the first call's
    # branch would silently leave out the term (the capture guards what the branch read).
    def scenario(compile):
        model = linear_model()
        optimizer = optim.SGD(model.parameters(), lr=0.1)
        weight = model[0].weight

        @compile
        def step(x, y):
            previous = None
            if weight.grad is not None:
                previous = (weight.grad * weight.grad).sum()
            if reset == "zero_grad":
                optimizer.zero_grad()
            else:
                for parameter in model.parameters():
                    parameter.grad = None
            loss = F.cross_entropy(model(x), y)
            loss.backward()
            optimizer.step()
            return loss if previous is None else loss + previous

        out = []
        for x, y in data():
            out.append(step(x, y).data.copy())
            out.extend(weights_of(model))
        return out

    assert outcome(scenario) == "equal"


def test_a_zero_grad_first_step_still_has_one_program():
    # Reading .grad after this call's own backward wrote it guards nothing: one program.
    model = linear_model()
    optimizer = optim.SGD(model.parameters(), lr=0.1)

    @tg.compile
    def step(x, y):
        optimizer.zero_grad()
        loss = F.cross_entropy(model(x), y)
        loss.backward()
        tg.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        norm = (model[0].weight.grad * model[0].weight.grad).sum()
        optimizer.step()
        return loss, norm

    for x, y in data():
        step(x, y)
    assert len(step.programs) == 1
