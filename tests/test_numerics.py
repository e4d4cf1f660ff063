"""Pinned CPU numerics (pipeline/numerics.py): the same bytes whatever CPU the libraries think they run on.

A second machine is not needed to show it: the variables below make the libraries take the code paths
another CPU would (MKL's branch, torch's kernel set, OpenBLAS's core type, numpy's SIMD loops). Unpinned,
they change the trained models; pinned, the stages' outputs are identical byte for byte.
"""

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import numpy  # noqa: F401 (loaded before pin() below: it must say so)
import numpy as np
import pytest

from pipeline import numerics
from tests.conftest import ROOT, merge, write_params

# two "other CPUs": what the libraries would pick on an older / a different x86-64 machine
EMULATED_CPUS = {
    "cpu_a": {
        "MKL_CBWR": "AVX",
        "ATEN_CPU_CAPABILITY": "default",
        "OPENBLAS_CORETYPE": "Sandybridge",
        "NPY_DISABLE_CPU_FEATURES": "X86_V3",
        numerics.FAISS_SIMD_VARIABLE: "NONE",
        numerics.FAISS_CORETYPE_VARIABLE: "Sandybridge",
    },
    "cpu_b": {
        "MKL_CBWR": "AUTO",
        "ATEN_CPU_CAPABILITY": "avx2",
        "OPENBLAS_CORETYPE": "Haswell",
        "NPY_DISABLE_CPU_FEATURES": "",
        numerics.FAISS_SIMD_VARIABLE: "AVX2",
        numerics.FAISS_CORETYPE_VARIABLE: "Haswell",
    },
}


@pytest.fixture(autouse=True)
def restored_environment(monkeypatch):
    """pin() writes os.environ: let monkeypatch put every variable it touches back."""
    for k in (*numerics.PINNED, *numerics.THREAD_VARIABLES):
        if k in os.environ:
            monkeypatch.setenv(k, os.environ[k])
        else:
            monkeypatch.delenv(k, raising=False)


def test_pin_sets_every_variable_and_the_threads(monkeypatch):
    monkeypatch.setenv(numerics.THREADS_VARIABLE, "3")
    monkeypatch.setenv("MKL_CBWR", "AVX512")  # what another CPU (or a user's shell) says is overridden
    monkeypatch.delenv(numerics.NATIVE_SWITCH, raising=False)
    with pytest.warns(RuntimeWarning, match="numpy.* loaded before the CPU numerics were pinned"):
        numerics.pin()
    assert all(os.environ[k] == v for k, v in numerics.PINNED.items())
    assert all(os.environ[k] == "3" for k in numerics.THREAD_VARIABLES)
    assert numerics.settings()["MKL_CBWR"] == "COMPATIBLE"


def test_native_switch_pins_only_the_threads(monkeypatch):
    monkeypatch.setenv(numerics.NATIVE_SWITCH, "1")
    monkeypatch.setenv("MKL_CBWR", "AVX2")
    monkeypatch.delenv(numerics.THREADS_VARIABLE, raising=False)
    numerics.pin()
    assert os.environ["MKL_CBWR"] == "AVX2" and os.environ["OMP_NUM_THREADS"] == "1"
    assert numerics.settings()[numerics.NATIVE_SWITCH] == "1"


def test_bad_thread_count_is_named(monkeypatch):
    monkeypatch.setenv(numerics.THREADS_VARIABLE, "two")
    with pytest.raises(ValueError, match="DML_THREADS"):
        numerics.threads()


def test_faiss_loads_its_own_blas_unpinned_and_leaves_the_pin_in_place():
    """faiss runs its fastest kernels (its results are re-ranked exactly: tests/test_evaluation.py); loading
    it must not unpin numpy's and scipy's OpenBLAS, which read the same variable."""
    code = (
        "import os, pipeline.numerics as n; f = n.faiss(); "
        "print(os.environ['OPENBLAS_CORETYPE'], f.omp_get_max_threads())"
    )
    env = {**os.environ, "PYTHONPATH": str(ROOT), numerics.THREADS_VARIABLE: "2"}
    env.pop(numerics.NATIVE_SWITCH, None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.split() == ["Nehalem", "2"], done.stderr


def test_torch_square_roots_are_correctly_rounded():
    """MKL's vector square root refines an RSQRTPS estimate whose bits differ between CPU makers (1 ulp off
    on about 1 in 6 float32 inputs on an Intel AVX-512 machine); pinned, torch's square roots are IEEE's
    (float32: the float64 root rounded once, which is the correctly rounded float32 root)."""
    import numpy as np
    import torch

    x = np.random.default_rng(0).random(100_000).astype(np.float32) * 1e3
    assert numerics.settings()["torch sqrt"] == "IEEE (interposed for MKL VML)"
    assert np.array_equal(torch.from_numpy(x).sqrt().numpy(), np.sqrt(x.astype(np.float64)).astype(np.float32))
    x64 = x.astype(np.float64) * np.pi
    assert np.array_equal(torch.from_numpy(x64).sqrt().numpy(), np.sqrt(x64))
    # torch.cdist (the Euclidean losses) on more than 25 rows: one matrix product of padded rows (aten's
    # _euclidean_dist), then the square root, which is IEEE's
    a, b = torch.from_numpy(x[:600].reshape(200, 3)), torch.from_numpy(x[600:1200].reshape(200, 3))
    an, bn = a.pow(2).sum(-1, keepdim=True), b.pow(2).sum(-1, keepdim=True)
    squared = torch.cat([a.mul(-2), an, torch.ones_like(an)], -1) @ torch.cat([b, torch.ones_like(bn), bn], -1).T
    ieee = np.sqrt(squared.clamp_min(0).numpy().astype(np.float64)).astype(np.float32)
    assert np.array_equal(torch.cdist(a, b).numpy(), ieee)


def test_without_a_c_compiler_pinning_says_the_square_root_is_not_pinned(tmp_path):
    code = "import warnings, pipeline.numerics as n; print(n.settings()['torch sqrt'])"
    env = {**os.environ, "CC": "/bin/false", "DML_SHIM_DIR": str(tmp_path), "PYTHONPATH": str(ROOT)}
    env.pop(numerics.NATIVE_SWITCH, None)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True)
    assert done.returncode == 0 and done.stdout.startswith("MKL VML (the C compiler '/bin/false' failed")
    assert "install gcc to pin them" in done.stderr and not list(tmp_path.iterdir())  # nothing half-built left


def test_faiss_on_another_cpus_kernels_changes_its_distances_not_our_neighbours(tmp_path):
    """The faiss emulation variables reach its kernels (its float32 distances change: its SIMD level for a
    few queries, its OpenBLAS for many), and the exact kNN's lists do not."""
    code = (
        "import sys, numpy as np, pipeline.numerics as n; from pipeline.evaluation.knn import nearest_neighbours; "
        "x = np.random.default_rng(0).standard_normal((3000, 48)).astype(np.float32); f = n.faiss(); "
        "few, _ = f.knn(x[:10], x, 20); many, _ = f.knn(x[:600], x, 20); "
        "np.savez(sys.argv[1], few=few, many=many, ours=nearest_neighbours(x, 20)[0])"
    )
    found = {}
    for name, level, core in (("a", "NONE", "Sandybridge"), ("b", "AVX2", "Haswell")):
        env = {
            **os.environ,
            "PYTHONPATH": str(ROOT),
            numerics.FAISS_SIMD_VARIABLE: level,
            numerics.FAISS_CORETYPE_VARIABLE: core,
        }
        done = subprocess.run(
            [sys.executable, "-c", code, str(tmp_path / f"{name}.npz")], env=env, capture_output=True, text=True
        )
        assert done.returncode == 0, done.stderr[-2000:]
        found[name] = np.load(tmp_path / f"{name}.npz")
    a, b = found["a"], found["b"]
    assert not np.array_equal(a["few"], b["few"]) and not np.array_equal(a["many"], b["many"])
    assert np.array_equal(a["ours"], b["ours"])


def test_a_faiss_simd_level_that_does_not_exist_is_named(monkeypatch):
    monkeypatch.setenv(numerics.FAISS_SIMD_VARIABLE, "AVX9")
    with pytest.raises(ValueError, match="DML_FAISS_SIMD='AVX9'"):
        numerics.faiss()


def _run(cmd, cwd, env):
    done = subprocess.run([sys.executable, "-m", *cmd], cwd=cwd, env=env, capture_output=True, text=True)
    assert done.returncode == 0, f"{cmd}:\n{done.stderr[-3000:]}"


def _digest(folder: Path) -> str:
    h = hashlib.sha256()
    for f in sorted(p for p in folder.rglob("*") if p.is_file() and p.suffix in (".npz", ".csv", ".json")):
        h.update(f.relative_to(folder).as_posix().encode() + f.read_bytes())
    return h.hexdigest()


@pytest.mark.slow
def test_stages_give_identical_outputs_on_emulated_cpus(tmp_path, tiny_dict):
    """The embed stage (two processes), the train stage (two spawned workers, torch + faiss), the evaluate
    stage (faiss kNN re-ranked exactly, k-means, spectra), the pictures (kNN, t-SNE, PNG bytes) and the LANML stage
    (numpy, scipy, cvxpy's numerics, metric-learn) on a tiny config, under two emulated CPUs (faiss's SIMD level and
    BLAS too): identical pinned; unpinned, embed and train already differ."""
    from pipeline.params.root import params_from_dict
    from pipeline.runs import all_runs

    params = write_params(
        tmp_path / "params.yaml",
        merge(
            tiny_dict,
            {
                "train": {"workers": 2},  # a convolution: kernels to choose
                "backbone": {"name": "tiny_cnn", "input_size": 16},
            },
        ),
    )
    base = {k: v for k, v in os.environ.items() if k not in (*numerics.PINNED, numerics.NATIVE_SWITCH)}
    base["PYTHONPATH"] = str(ROOT)
    _run(["stages.prepare", "--params", str(params), "--out", "prepared"], tmp_path, base)
    digests = {}
    for pinned in (True, False):
        for cpu, variables in EMULATED_CPUS.items():
            out = tmp_path / f"{cpu}-{'pinned' if pinned else 'native'}"
            env = {**base, **variables, **({} if pinned else {numerics.NATIVE_SWITCH: "1"})}
            features = str(out / "features")
            _run(["stages.embed", "--params", str(params), "--data", "prepared", "--out", features], tmp_path, env)
            _run(
                [
                    "stages.train",
                    "--params",
                    str(params),
                    "--method",
                    "c2_ccp",
                    "--data",
                    "prepared",
                    "--features",
                    features,
                    "--out",
                    str(out / "models"),
                    "--train-logs",
                    str(out / "logs"),
                    "--subproblems",
                    str(out / "subproblems"),
                ],
                tmp_path,
                env,
            )
            # the folds trained in the two workers (the stage process trains none): their epochs reach the stage's log
            log = (tmp_path / "data" / "logs" / "train.log").read_text()
            assert all(f"c2_ccp-{fold}: epoch 1 loss " in log for fold in (0, 1)), log[-3000:]
            if not pinned:  # unpinned, embed and train are enough to show that the emulation reaches the kernels
                digests[pinned, cpu] = {part: _digest(out / part) for part in ("features", "models")}
                continue
            for name in all_runs(params_from_dict(tiny_dict)):  # evaluate reads every run: c2_ccp's models
                shutil.copytree(out / "models", out / "all_models" / name)
            _run(
                [
                    "stages.evaluate",
                    "--params",
                    str(params),
                    "--models",
                    str(out / "all_models"),
                    "--data",
                    "prepared",
                    "--features",
                    features,
                    "--backbone",
                    str(out / "headline" / "backbone.json"),
                    "--out",
                    str(out / "metrics"),
                    "--spectra",
                    str(out / "spectra"),
                    "--per-class",
                    str(out / "per_class"),
                    "--headline",
                    str(out / "headline" / "h.json"),
                ],
                tmp_path,
                env,
            )
            _run(
                [
                    "stages.pictures",
                    "--params",
                    str(params),
                    "--data",
                    "prepared",
                    "--models",
                    str(out / "all_models"),
                    "--out",
                    str(out / "pictures"),
                ],
                tmp_path,
                env,
            )
            _run(
                [
                    "stages.lanml",
                    "--params",
                    str(params),
                    "--dataset",
                    "iris",
                    "--cache",
                    "uci",
                    "--out",
                    str(out / "lanml" / "iris.json"),
                ],
                tmp_path,
                env,
            )
            digests[pinned, cpu] = {
                part: _digest(out / part)
                for part in (
                    "features",
                    "models",
                    "logs",
                    "metrics",
                    "spectra",
                    "per_class",
                    "headline",
                    "pictures",
                    "lanml",
                )
            }
    assert digests[True, "cpu_a"] == digests[True, "cpu_b"]
    # the emulation reaches the kernels: unpinned, the two CPUs embed and train differently
    assert digests[False, "cpu_a"]["features"] != digests[False, "cpu_b"]["features"]
    assert digests[False, "cpu_a"]["models"] != digests[False, "cpu_b"]["models"]


def _import_pipeline(env: dict) -> subprocess.Popen:
    code = "import pipeline.numerics as n; print(n.settings()['torch sqrt'])"
    return subprocess.Popen(
        [sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )


def test_first_import_builds_the_square_root_library_then_reuses_it_even_when_two_processes_build_at_once(tmp_path):
    """A new machine has an empty cache: the first import compiles the library into it and loads it, the next
    loads the cached file, and two processes that compile at once (the train workers start together) both load
    a whole library. Nothing but the library is left in the folder."""
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HOME": str(tmp_path / "home"), "XDG_CACHE_HOME": ""}
    for k in ("DML_SHIM_DIR", "DML_CACHE_DIR", numerics.NATIVE_SWITCH):
        env.pop(k, None)
    folder = tmp_path / "home" / ".cache" / "dml-repro"
    for attempt in ("first", "cached"):
        done = _import_pipeline(env)
        out, err = done.communicate()
        assert done.returncode == 0 and out.strip() == "IEEE (interposed for MKL VML)", (attempt, err)
        built = [p.name for p in folder.glob("ieee_sqrt_*")]
        assert len(built) == 1 and built[0].endswith(".so") and built[0].count(".") == 1, built  # no partial file
    env["DML_SHIM_DIR"] = str(tmp_path / "together")
    together = [_import_pipeline(env) for _ in range(2)]
    for process in together:
        out, err = process.communicate()
        assert process.returncode == 0 and out.strip() == "IEEE (interposed for MKL VML)", err
    assert [p.name for p in (tmp_path / "together").iterdir()] == built


def test_an_unwritable_cache_folder_falls_back_to_a_temporary_one_in_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "DML_CACHE_DIR": str(blocker / "cache"), "TMPDIR": str(tmp_path)}
    env.pop("DML_SHIM_DIR", None)
    env.pop(numerics.NATIVE_SWITCH, None)
    out, err = _import_pipeline(env).communicate()
    assert out.strip() == "IEEE (interposed for MKL VML)"
    assert (
        err.strip()
        == f"pipeline: cache folder {blocker / 'cache'} is not writable; using {tmp_path}/dml-repro-{os.getuid()}"
    )
