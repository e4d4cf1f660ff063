"""Adam at vector speed, bit for bit torch's fused CPU Adam under the pinned generic kernels.

Under the pinned numerics (pipeline/numerics.py: ``ATEN_CPU_CAPABILITY=default``) torch's fused Adam runs its
generic ``Vectorized`` build, which works one element at a time: several times the native kernel's time. Every
operation of its update is an IEEE add, subtract, multiply, divide or square root, each correctly rounded per
element, so a C loop doing the same operations in the same order gives the same bits at any vector width
(SSE2, AVX2), provided nothing is contracted into a fused multiply-add (``-ffp-contract=off``) and no
approximate instruction (``rcpps``, ``rsqrtps``) is used. `ExactAdam` runs that loop, compiled on first use
into the cache folder (`pipeline.numerics.build_library`), and tests/test_exact_adam.py checks the bits against
``torch.optim.Adam(fused=True)``.

The update, float32 unless said (torch 2.14, aten/src/ATen/native/cpu/FusedAdamKernel.cpp, ``adam_fused_step_impl``
and ``adam_math`` for float, ``ADAM_MODE::ORIGINAL``; its vector body and scalar tail compute the same)::

    step += 1                                   (torch/optim/adam.py _fused_adam: _foreach_add_(state_steps, 1))
    t = double(step)                            (double step = state_step.item<float>())
    bc1 = 1 - pow(beta1, t); bc2 = 1 - pow(beta2, t)           (double: "to align with non-fused adam")
    step_size = lr / bc1; bc2_sqrt = sqrt(bc2)                   (double)
    if weight_decay != 0: g = g + p * float(weight_decay)        (Adam's L2 term, added to the gradient)
    w = float(1 - beta1)                        (exp_avg.lerp_(grad, 1 - beta1), as torch's lerp does it:)
    m = w * (g - m) + m          if |w| < 0.5   (vec::fmadd(coeff, grad - exp_avg, base): a * b + c, two roundings
    m = (w - 1) * (g - m) + g    otherwise       in the generic build; the tail's g - (g - m) * (1 - w) is the same)
    v = v * float(beta2) + float(1 - beta2) * g * g              (left to right: (c * g) * g)
    denom = sqrt(v) / float(bc2_sqrt) + float(eps)
    p = p + float(-step_size) * m / denom       (left to right: ((-s) * m) / denom; the tail's p - s * m / denom
                                                 is the same, negation being exact)

Where the loop does not apply it hands over to torch's own fused step, which is then what runs: tensors that are
not contiguous float32 on the CPU, groups with amsgrad, maximize, decoupled weight decay, a Tensor lr or betas,
an AMP grad scaler's step, and wholly when the library is missing (no C compiler, not Linux x86-64) or torch
does not run its generic kernels (``DML_NATIVE_NUMERICS=1``: the AVX2 build uses real fused multiply-adds, which
this loop must not). `make_adam` then returns plain ``torch.optim.Adam(fused=True)``.
"""

from __future__ import annotations

import ctypes
import platform
import sys

import torch
from torch.optim.adam import adam as torch_adam

from pipeline import numerics

KERNEL = r"""
#include <math.h>
#include <stdint.h>

/* torch FusedAdamKernel.cpp adam_math (float, ADAM_MODE::ORIGINAL); `decay` and `small` are constants after
   inlining, so each of the four loops is straight-line IEEE arithmetic the compiler vectorises as it is. */
static inline __attribute__((always_inline)) void adam_loop(
    float *restrict param, const float *restrict grad, float *restrict exp_avg, float *restrict exp_avg_sq,
    int64_t n, const int decay, const int small, float wd, float coeff, float beta2, float c2, float bc2_sqrt,
    float eps, float neg_step_size) {
  for (int64_t i = 0; i < n; i++) {
    float g = grad[i];
    if (decay) g = g + param[i] * wd;              /* grad_vec += param_vec * Vec(weight_decay) */
    float m = exp_avg[i];
    m = coeff * (g - m) + (small ? m : g);         /* vec::fmadd(coeff, grad - exp_avg, base) = a * b + c */
    float v = exp_avg_sq[i] * beta2 + c2 * g * g;  /* exp_avg_sq * beta2 + (c2 * grad) * grad */
    exp_avg[i] = m;
    exp_avg_sq[i] = v;
    float denom = sqrtf(v) / bc2_sqrt + eps;       /* sqrt(exp_avg_sq) / bias_correction2_sqrt + eps */
    param[i] = param[i] + neg_step_size * m / denom;  /* param + (-step_size) * exp_avg / denom */
  }
}

static inline __attribute__((always_inline)) void adam_step(
    float *restrict param, const float *restrict grad, float *restrict exp_avg, float *restrict exp_avg_sq,
    float *step, int64_t n, double lr, double beta1, double beta2, double weight_decay, double eps) {
  *step = *step + 1.0f;                            /* torch._foreach_add_(state_steps, 1) on float32 */
  double t = *step;                                /* double step = state_step.item<float>() */
  double bias_correction1 = 1 - pow(beta1, t);
  double bias_correction2 = 1 - pow(beta2, t);
  double step_size = lr / bias_correction1;
  double bias_correction2_sqrt = sqrt(bias_correction2);
  float w = (float)(1 - beta1);                    /* lerp_weight = Vec(scalar_t(exp_avg_grad_coefficient)) */
  int small = fabsf(w) < 0.5f;                     /* mask = lerp_weight.abs() < Vec(0.5) */
  float coeff = small ? w : w - 1.0f;              /* blendv(lerp_weight - Vec(1), lerp_weight, mask) */
  float wd = (float)weight_decay, b2 = (float)beta2, c2 = (float)(1 - beta2);
  float bc2s = (float)bias_correction2_sqrt, e = (float)eps, neg = (float)(-step_size);
  int decay = weight_decay != 0.0;                 /* weight_decay != 0.f */
  if (decay && small) adam_loop(param, grad, exp_avg, exp_avg_sq, n, 1, 1, wd, coeff, b2, c2, bc2s, e, neg);
  else if (decay) adam_loop(param, grad, exp_avg, exp_avg_sq, n, 1, 0, wd, coeff, b2, c2, bc2s, e, neg);
  else if (small) adam_loop(param, grad, exp_avg, exp_avg_sq, n, 0, 1, wd, coeff, b2, c2, bc2s, e, neg);
  else adam_loop(param, grad, exp_avg, exp_avg_sq, n, 0, 0, wd, coeff, b2, c2, bc2s, e, neg);
}

void exact_adam_sse2(float *restrict param, const float *restrict grad, float *restrict exp_avg,
                     float *restrict exp_avg_sq, float *step, int64_t n, double lr, double beta1, double beta2,
                     double weight_decay, double eps) {
  adam_step(param, grad, exp_avg, exp_avg_sq, step, n, lr, beta1, beta2, weight_decay, eps);
}

__attribute__((target("avx2"))) void exact_adam_avx2(float *restrict param, const float *restrict grad,
                     float *restrict exp_avg, float *restrict exp_avg_sq, float *step, int64_t n, double lr,
                     double beta1, double beta2, double weight_decay, double eps) {
  adam_step(param, grad, exp_avg, exp_avg_sq, step, n, lr, beta1, beta2, weight_decay, eps);
}

int exact_adam_has_avx2(void) {
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") != 0;
}
"""
# SSE2 everywhere (the AVX2 function by its own target attribute); no contraction into FMAs; sqrtf inlined as
# SQRTPS; libm's pow is the one torch calls (linked whatever the linker's --as-needed default)
KERNEL_FLAGS = ["-O3", "-msse2", "-mno-avx", "-ffp-contract=off", "-fno-math-errno", "-shared", "-fPIC"]
KERNEL_FLAGS += ["-Wl,--no-as-needed", "-lm"]
_ARGTYPES = [ctypes.c_void_p] * 5 + [ctypes.c_int64] + [ctypes.c_double] * 5

_kernel = None  # the loaded C function, or False when it cannot be had
_status = "not loaded"


def kernel():
    """The C step (the widest this CPU runs), built and loaded on first use; None where it cannot be had."""
    global _kernel, _status
    if _kernel is None:
        _kernel, _status = _load()
    return _kernel or None


def status() -> str:
    """Which Adam step is in force, for the reports."""
    kernel()
    return _status


def _load():
    if not (sys.platform.startswith("linux") and platform.machine() == "x86_64"):
        return False, "torch fused Adam (the exact kernel is built for Linux x86-64 only)"
    if numerics.native() or torch.backends.cpu.get_cpu_capability() != "DEFAULT":
        return False, "torch fused Adam (torch runs its native CPU kernels, not the generic ones)"
    library, problem = numerics.build_library("exact_adam", KERNEL, KERNEL_FLAGS)
    if library is None:
        return False, f"torch fused Adam ({problem})"
    lib = ctypes.CDLL(str(library))
    isa = "avx2" if lib.exact_adam_has_avx2() else "sse2"
    function = getattr(lib, f"exact_adam_{isa}")
    function.argtypes, function.restype = _ARGTYPES, None
    if not agrees(function):
        return False, f"torch fused Adam (torch {torch.__version__}'s fused Adam computes otherwise than the C loop)"
    return function, f"exact C kernel ({isa.upper()})"


@torch.no_grad()
def agrees(function, size: int = 37, steps: int = 3) -> bool:
    """Whether `function` gives torch's fused Adam's bits on a few steps (a torch whose kernel computes otherwise
    turns the C loop off): both forms of the lerp, with and without weight decay, over torch's vector body
    (8 floats a vector in the generic build) and its scalar tail."""
    generator = torch.Generator().manual_seed(0)
    for betas, weight_decay in (((0.9, 0.999), 0.1), ((0.3, 0.99), 0.0)):
        theirs = torch.randn(size, generator=generator, dtype=torch.float32)
        ours, m, v = theirs.clone(), torch.zeros_like(theirs), torch.zeros_like(theirs)
        step = torch.zeros((), dtype=torch.float32)
        reference = torch.optim.Adam([theirs], lr=0.01, betas=betas, weight_decay=weight_decay, fused=True)
        for _ in range(steps):
            theirs.grad = torch.randn(size, generator=generator, dtype=torch.float32)
            reference.step()
            args = (ours, theirs.grad, m, v, step)
            function(*(t.data_ptr() for t in args), size, 0.01, *betas, weight_decay, 1e-8)
        state = reference.state[theirs]
        if not (torch.equal(ours, theirs) and torch.equal(m, state["exp_avg"]) and torch.equal(v, state["exp_avg_sq"])):
            return False
    return True


def make_adam(params, **kwargs) -> torch.optim.Optimizer:
    """`ExactAdam` where its kernel can be had, else ``torch.optim.Adam(params, fused=True, **kwargs)``."""
    if kernel() is None:
        return torch.optim.Adam(params, fused=True, **kwargs)
    return ExactAdam(params, **kwargs)


class ExactAdam(torch.optim.Adam):
    """``torch.optim.Adam(fused=True)`` (its arguments, groups, state and state_dict) whose step on contiguous
    float32 CPU tensors runs the C loop above: the same bits, at the CPU's vector width."""

    def __init__(self, params, lr=1e-3, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0, amsgrad=False, **kwargs):
        if kwargs.pop("fused", True) is not True:
            raise ValueError("ExactAdam is torch's fused Adam: fused=True only")
        super().__init__(params, lr, betas, eps, weight_decay, amsgrad, fused=True, **kwargs)

    @torch.no_grad()
    def step(self, closure=None):
        """One Adam step for every parameter with a gradient (see the module docstring)."""
        loss = None
        if closure is not None:
            with torch.enable_grad():
                loss = closure()
        function = kernel()
        scaled = getattr(self, "grad_scale", None) is not None or getattr(self, "found_inf", None) is not None
        for group in self.param_groups:
            if function is None or scaled or not _plain(group):
                self._torch_step(group, group["params"])
                continue
            lr, (beta1, beta2), eps, weight_decay = group["lr"], group["betas"], group["eps"], group["weight_decay"]
            rest, written = [], []
            for p in group["params"]:
                grad = p.grad
                if grad is None:
                    continue
                n, state = p.numel(), self.state[p]
                if not state and _fits(p, n):  # torch adam.py Adam._init_group, for fused
                    state["step"] = torch.zeros((), dtype=torch.float32)
                    state["exp_avg"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                    state["exp_avg_sq"] = torch.zeros_like(p, memory_format=torch.preserve_format)
                m, v, step = state.get("exp_avg"), state.get("exp_avg_sq"), state.get("step")
                if not (_fits(p, n) and _fits(grad, n) and _fits(m, n) and _fits(v, n) and _fits(step, 1)):
                    rest.append(p)
                    continue
                pointers = (p.data_ptr(), grad.data_ptr(), m.data_ptr(), v.data_ptr(), step.data_ptr())
                function(*pointers, n, lr, beta1, beta2, weight_decay, eps)
                written += (p, grad, m, v, step)
            # written through pointers: bump the version counters, as torch's in-place ops do (_fused_adam_ marks
            # its grads mutable too)
            torch.autograd.graph.increment_version(written)
            if rest:
                self._torch_step(group, rest)
        return loss

    def _torch_step(self, group: dict, params: list) -> None:
        """torch's own step for `params` of `group` (torch/optim/adam.py Adam.step, for one group)."""
        self._accelerator_graph_capture_health_check()
        group = {**group, "params": params}
        params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps = [], [], [], [], [], []
        has_complex = self._init_group(
            group, params_with_grad, grads, exp_avgs, exp_avg_sqs, max_exp_avg_sqs, state_steps
        )
        beta1, beta2 = group["betas"]
        torch_adam(
            params_with_grad,
            grads,
            exp_avgs,
            exp_avg_sqs,
            max_exp_avg_sqs,
            state_steps,
            amsgrad=group["amsgrad"],
            has_complex=has_complex,
            beta1=beta1,
            beta2=beta2,
            lr=group["lr"],
            weight_decay=group["weight_decay"],
            eps=group["eps"],
            maximize=group["maximize"],
            foreach=group["foreach"],
            capturable=group["capturable"],
            differentiable=group["differentiable"],
            fused=group["fused"],
            grad_scale=getattr(self, "grad_scale", None),
            found_inf=getattr(self, "found_inf", None),
            decoupled_weight_decay=group["decoupled_weight_decay"],
        )


def _plain(group: dict) -> bool:
    """A group the C loop computes as torch would: fused Adam, float hyper-parameters, no variant."""
    return (
        group["fused"] is True
        and not (group["amsgrad"] or group["maximize"] or group["decoupled_weight_decay"])
        and not (group["capturable"] or group["differentiable"])
        and isinstance(group["lr"], float | int)
        and all(isinstance(b, float | int) for b in group["betas"])
    )


def _fits(t, n: int) -> bool:
    """A contiguous float32 CPU tensor of n elements (what the C loop reads and writes)."""
    return (
        isinstance(t, torch.Tensor)
        and t.dtype == torch.float32
        and t.is_cpu
        and t.layout == torch.strided
        and t.is_contiguous()
        and t.numel() == n
    )
