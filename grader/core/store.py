"""Hidden on-disk storage of cases and reference outputs: ``.npy`` files plus a JSON manifest.

Never pickle.  Layout of a bundle directory::

    manifest.json                       {"format": 1, "cases": [...], "reference": {...}}
    cases/<NNN>.<input>.npy             case inputs
    reference/<NNN>.<result>.npy        expected outputs
"""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

import numpy as np

from .grade import Reference
from .results import OutputDir
from .spec import CASE_NAME_RE, Case, ExerciseSpec, is_identifier

FORMAT = 1
MAX_ARRAY_BYTES = 256 * 1024 * 1024


def _save(path: Path, arr: np.ndarray) -> None:
    with open(path, "wb") as f:
        np.lib.format.write_array(f, np.asarray(arr, order="C"), allow_pickle=False)  # 0-d stays 0-d


def save_bundle(directory: Path, spec: ExerciseSpec, cases: list[Case], ref: Reference) -> None:
    """Write cases and reference outputs to ``directory`` (replaced atomically as a whole)."""
    directory = Path(directory)
    directory.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".bundle-", dir=directory.parent))
    try:
        (tmp / "cases").mkdir()
        (tmp / "reference").mkdir()
        cases_out: list[dict[str, Any]] = []
        stdout: dict[str, str] = {}
        results: dict[str, list[str]] = {}
        manifest = {"format": FORMAT, "cases": cases_out, "reference": {"stdout": stdout, "results": results}}
        for i, case in enumerate(cases):
            for name, arr in case.inputs.items():
                _save(tmp / "cases" / f"{i:03d}.{name}.npy", arr)
            cases_out.append(
                {
                    "name": case.name,
                    "hidden": case.hidden,
                    "weight": case.weight,
                    "inputs": sorted(case.inputs),
                }
            )
            outputs = ref.outputs.get(case.name, {})
            for name, arr in outputs.items():
                _save(tmp / "reference" / f"{i:03d}.{name}.npy", arr)
            results[case.name] = sorted(outputs)
            if case.name in ref.stdout:
                stdout[case.name] = ref.stdout[case.name]
        (tmp / "manifest.json").write_text(
            json.dumps(manifest, ensure_ascii=False, indent=1), encoding="utf-8"
        )
        os.chmod(tmp, 0o700)
        old = None
        if directory.exists():
            old = directory.with_name(directory.name + f".old-{os.getpid()}")
            directory.rename(old)
        tmp.rename(directory)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def load_bundle(directory: Path) -> tuple[list[Case], Reference]:
    """Read a bundle written by `save_bundle` (validated; no pickle, no symlinks)."""
    directory = Path(directory)
    manifest = json.loads((directory / "manifest.json").read_text(encoding="utf-8"))
    if manifest.get("format") != FORMAT:
        raise ValueError(f"unknown bundle format {manifest.get('format')!r}")
    cases: list[Case] = []
    outputs: dict[str, dict[str, np.ndarray]] = {}
    with OutputDir(str(directory / "cases")) as cdir, OutputDir(str(directory / "reference")) as rdir:
        for i, entry in enumerate(manifest["cases"]):
            name = entry["name"]
            if not isinstance(name, str) or not CASE_NAME_RE.match(name):
                raise ValueError(f"bad case name {name!r}")
            inputs = {}
            for input_name in entry["inputs"]:
                if not is_identifier(input_name):
                    raise ValueError(f"bad input name {input_name!r}")
                arr = cdir.load_array(f"{i:03d}.{input_name}.npy", MAX_ARRAY_BYTES)
                if not isinstance(arr, np.ndarray):
                    raise ValueError(f"case {name}: input {input_name}: {arr}")
                inputs[input_name] = arr
            cases.append(
                Case(name=name, inputs=inputs, hidden=bool(entry["hidden"]), weight=float(entry["weight"]))
            )
            outputs[name] = {}
            for result in manifest["reference"]["results"].get(name, []):
                if not is_identifier(result) and result != "return":
                    raise ValueError(f"bad result name {result!r}")
                arr = rdir.load_array(f"{i:03d}.{result}.npy", MAX_ARRAY_BYTES)
                if not isinstance(arr, np.ndarray):
                    raise ValueError(f"case {name}: result {result}: {arr}")
                outputs[name][result] = arr
    stdout = {k: v for k, v in manifest["reference"].get("stdout", {}).items() if isinstance(v, str)}
    return cases, Reference(outputs=outputs, stdout=stdout)
