"""ExactAdam (pipeline/training/exact_adam.py): torch's fused CPU Adam bit for bit, at the CPU's vector width."""

import pipeline  # noqa: F401  (first: it pins the CPU numerics before torch loads)

# isort: split
import ctypes

import pytest
import torch

from pipeline import numerics
from pipeline.training import exact_adam

SIZES = ((1,), (7,), (33,), (1000,), (4099,), (37, 11), (0,))  # only 1000 and 0 multiples of the vector width


def _isa_kernel(isa: str):
    """The C step for one instruction set, whatever this CPU would pick."""
    library, problem = numerics.build_library("exact_adam", exact_adam.KERNEL, exact_adam.KERNEL_FLAGS)
    assert library is not None, problem
    lib = ctypes.CDLL(str(library))
    if isa == "avx2" and not lib.exact_adam_has_avx2():
        pytest.skip("this CPU has no AVX2")
    function = getattr(lib, f"exact_adam_{isa}")
    function.argtypes, function.restype = exact_adam._ARGTYPES, None
    return function


@pytest.fixture(params=["sse2", "avx2"])
def isa(request, monkeypatch):
    """Each compiled loop in turn (the one ExactAdam runs is the widest the CPU has)."""
    assert exact_adam.kernel() is not None, exact_adam.status()
    monkeypatch.setattr(exact_adam, "_kernel", _isa_kernel(request.param))
    return request.param


def _not_called(*args):
    raise AssertionError("torch's step ran where the C loop should have")


def _twins(seed: int = 0, sizes=SIZES):
    """The same starting parameters twice: for torch's Adam and for ours."""
    generator = torch.Generator().manual_seed(seed)
    first = [torch.randn(shape, generator=generator).requires_grad_() for shape in sizes]
    return first, [p.detach().clone().requires_grad_() for p in first]


def _groups(params, split=3, proxy_lr=1e-2):
    return [{"params": params[:split]}, {"params": params[split:], "lr": proxy_lr}]


def _assert_same(theirs, ours, opt_theirs, opt_ours, where=""):
    for i, (a, b) in enumerate(zip(theirs, ours)):
        assert torch.equal(a, b), f"param {i} {where}"
        sa, sb = opt_theirs.state.get(a, {}), opt_ours.state.get(b, {})
        assert sa.keys() == sb.keys(), f"state keys of param {i} {where}"
        for key in sa:
            assert sa[key].dtype == sb[key].dtype and torch.equal(sa[key], sb[key]), f"{key} of param {i} {where}"


def _train(theirs, ours, opt_theirs, opt_ours, steps=50, seed=1, skip=(1,), reset=(20, 4)):
    """Random gradients of magnitudes 1e-6 .. 10; params `skip` have no gradient on every third step;
    param reset[1]'s moments are dropped at step reset[0] (what ccp.py does to the proxies)."""
    generator = torch.Generator().manual_seed(seed)
    for step in range(steps):
        for i, (a, b) in enumerate(zip(theirs, ours)):
            scale = 10.0 ** (-6 + 7 * torch.rand((), generator=generator).item())
            grad = torch.empty_like(a).copy_(torch.randn(a.shape, generator=generator, dtype=a.dtype) * scale)
            a.grad, b.grad = (None, None) if i in skip and step % 3 == 0 else (grad.clone(), grad.clone())
        if step == reset[0]:
            opt_theirs.state.pop(theirs[reset[1]]), opt_ours.state.pop(ours[reset[1]])
        opt_theirs.step(), opt_ours.step()
        _assert_same(theirs, ours, opt_theirs, opt_ours, f"after step {step}")


@pytest.mark.parametrize("weight_decay", [0.0, 1e-4])
@pytest.mark.parametrize("betas", [(0.9, 0.999), (0.3, 0.99)])  # torch's lerp: weight 1 - beta1 below / above 0.5
def test_the_same_bits_as_torch_fused_adam(isa, weight_decay, betas, monkeypatch):
    monkeypatch.setattr(exact_adam.ExactAdam, "_torch_step", _not_called)
    theirs, ours = _twins()
    opt_theirs = torch.optim.Adam(_groups(theirs), lr=1e-3, betas=betas, weight_decay=weight_decay, fused=True)
    opt_ours = exact_adam.ExactAdam(_groups(ours), lr=1e-3, betas=betas, weight_decay=weight_decay)
    _train(theirs, ours, opt_theirs, opt_ours)
    assert opt_theirs.state[theirs[0]]["step"].item() == 50 and opt_theirs.state[theirs[1]]["step"].item() == 33


def test_state_dict_goes_both_ways_and_in_place_writes_are_versioned(monkeypatch):
    """ExactAdam's state_dict loads into torch's Adam and back, and training goes on with the same bits; the
    parameters' version counters move as under torch's in-place kernel."""
    monkeypatch.setattr(exact_adam.ExactAdam, "_torch_step", _not_called)
    theirs, ours = _twins()
    opt_theirs = torch.optim.Adam(_groups(theirs), lr=1e-3, weight_decay=1e-4, fused=True)
    opt_ours = exact_adam.ExactAdam(_groups(ours), lr=1e-3, weight_decay=1e-4)
    _train(theirs, ours, opt_theirs, opt_ours, steps=5)
    swapped_theirs = torch.optim.Adam(_groups(theirs), lr=1e-3, weight_decay=1e-4, fused=True)
    swapped_theirs.load_state_dict(opt_ours.state_dict())
    swapped_ours = exact_adam.ExactAdam(_groups(ours), lr=1e-3, weight_decay=1e-4)
    swapped_ours.load_state_dict(opt_theirs.state_dict())
    _assert_same(theirs, ours, swapped_theirs, swapped_ours, "after loading")
    version = ours[0]._version
    _train(theirs, ours, swapped_theirs, swapped_ours, steps=5, seed=2, reset=(-1, 0))
    assert ours[0]._version > version


def test_what_the_loop_does_not_take_goes_to_torch_and_stays_the_same(monkeypatch):
    """A non-contiguous parameter, a float64 one, an amsgrad group and AdamW's decay: torch's own step runs
    for those, the loop for the rest of their group."""
    handed, torch_step = [], exact_adam.ExactAdam._torch_step

    def spy(self, group, params):
        handed.append([p for p in params if p.grad is not None])
        torch_step(self, group, params)

    monkeypatch.setattr(exact_adam.ExactAdam, "_torch_step", spy)
    generator = torch.Generator().manual_seed(3)
    base = [torch.randn(8, 6, generator=generator).t(), torch.randn(33, generator=generator, dtype=torch.float64)]
    base += [torch.randn(n, generator=generator) for n in (7, 33, 5)]
    theirs = [p.clone().requires_grad_() for p in base]
    ours = [p.clone().requires_grad_() for p in base]
    assert not theirs[0].is_contiguous() and not ours[0].is_contiguous()

    def groups(params):
        return [
            {"params": params[:3]},
            {"params": params[3:4], "amsgrad": True},
            {"params": params[4:], "decoupled_weight_decay": True},
        ]

    opt_theirs = torch.optim.Adam(groups(theirs), lr=1e-3, weight_decay=1e-2, fused=True)
    opt_ours = exact_adam.ExactAdam(groups(ours), lr=1e-3, weight_decay=1e-2)
    _train(theirs, ours, opt_theirs, opt_ours, steps=8, skip=(), reset=(-1, 0))
    assert "max_exp_avg_sq" in opt_ours.state[ours[3]]
    by_step = [[id(p) for p in params] for params in handed]
    assert by_step == [[id(ours[0]), id(ours[1])], [id(ours[3])], [id(ours[4])]] * 8  # not ours[2]


def test_a_grad_scalers_step_is_torchs(monkeypatch):
    """Under AMP's GradScaler (grad_scale and found_inf set on the optimiser) torch's fused step unscales."""
    theirs, ours = _twins()
    opt_theirs = torch.optim.Adam(_groups(theirs), lr=1e-3, weight_decay=1e-4, fused=True)
    opt_ours = exact_adam.ExactAdam(_groups(ours), lr=1e-3, weight_decay=1e-4)
    for optimizer in (opt_theirs, opt_ours):
        optimizer.grad_scale, optimizer.found_inf = torch.tensor(1024.0), torch.tensor(0.0)
    _train(theirs, ours, opt_theirs, opt_ours, steps=3)
    monkeypatch.setattr(exact_adam.ExactAdam, "_torch_step", _not_called)
    for optimizer in (opt_theirs, opt_ours):
        del optimizer.grad_scale, optimizer.found_inf
    _train(theirs, ours, opt_theirs, opt_ours, steps=3, seed=4, reset=(-1, 0))


def test_without_the_library_it_is_torch_fused_adam(monkeypatch):
    monkeypatch.setattr(exact_adam, "_kernel", False)
    monkeypatch.setattr(exact_adam, "_status", "torch fused Adam (test)")
    params = [torch.zeros(3, requires_grad=True)]
    made = exact_adam.make_adam(params, lr=1e-3, weight_decay=1e-4)
    assert type(made) is torch.optim.Adam and made.defaults["fused"] is True
    theirs, ours = _twins()
    opt_theirs = torch.optim.Adam(_groups(theirs), lr=1e-3, weight_decay=1e-4, fused=True)
    opt_ours = exact_adam.ExactAdam(_groups(ours), lr=1e-3, weight_decay=1e-4)
    _train(theirs, ours, opt_theirs, opt_ours, steps=10)


def test_no_compiler_or_native_numerics_turn_the_loop_off(monkeypatch, tmp_path):
    monkeypatch.setattr(exact_adam, "_status", exact_adam.status())
    monkeypatch.setenv("DML_SHIM_DIR", str(tmp_path))
    monkeypatch.setenv("CC", "/bin/false")
    monkeypatch.setattr(exact_adam, "_kernel", None)
    assert exact_adam.kernel() is None and exact_adam.status().startswith("torch fused Adam (the C compiler")
    assert not list(tmp_path.iterdir())  # nothing half-built left
    monkeypatch.delenv("CC")
    monkeypatch.setenv(numerics.NATIVE_SWITCH, "1")
    monkeypatch.setattr(exact_adam, "_kernel", None)
    assert exact_adam.kernel() is None and "native" in exact_adam.status()
    monkeypatch.delenv(numerics.NATIVE_SWITCH)
    monkeypatch.setattr(exact_adam, "_kernel", None)
    assert exact_adam.kernel() is not None and exact_adam.status().startswith("exact C kernel")
    assert isinstance(exact_adam.make_adam([torch.zeros(2, requires_grad=True)]), exact_adam.ExactAdam)


def test_the_self_check_refuses_a_loop_that_is_one_bit_off():
    function = exact_adam.kernel()
    assert exact_adam.agrees(function)
    assert not exact_adam.agrees(lambda *args: function(*args[:6], args[6] * (1 + 2**-20), *args[7:]))
