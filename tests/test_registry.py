"""pipeline/infra/registry.py: a registry package imports each of its modules (not its subpackages)."""

import sys

from pipeline.infra.registry import import_modules


def test_import_modules_imports_each_module_of_the_package_and_skips_its_subpackages(tmp_path, monkeypatch):
    package = tmp_path / "toyreg"
    (package / "sub").mkdir(parents=True)
    (package / "__init__.py").write_text("LOADED = []\n")
    for name in ("alpha", "beta"):
        (package / f"{name}.py").write_text(f"import toyreg\ntoyreg.LOADED.append({name!r})\n")
    (package / "sub" / "__init__.py").write_text("import toyreg\ntoyreg.LOADED.append('sub')\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        import_modules("toyreg")
        import_modules("toyreg")
        assert sorted(sys.modules["toyreg"].LOADED) == ["alpha", "beta"]
    finally:
        for name in [m for m in sys.modules if m == "toyreg" or m.startswith("toyreg.")]:
            del sys.modules[name]
        import_modules.cache_clear()
