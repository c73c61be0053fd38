"""docker-compose.yml, docker-compose.cpu.yml and the Dockerfile, checked without a Docker engine.

The files are validated against the Compose specification's JSON schema, `tests/compose-spec.json`:
copied from the compose-spec/compose-spec repository (commit 170098ba07d9f53c383a41bfd4c5166b0a4529a6,
schema/compose-spec.json, Apache-2.0). Then the parts that decide whether Ollama gets the GPU, and
the start order, are asserted one by one.
"""

from __future__ import annotations

import copy
import json
import re
import shlex
import subprocess
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.conftest import ROOT

SCHEMA = json.loads((ROOT / "tests" / "compose-spec.json").read_text(encoding="utf-8"))
COMPOSE = ROOT / "docker-compose.yml"
CPU_OVERRIDE = ROOT / "docker-compose.cpu.yml"
DOCKERFILE = ROOT / "Dockerfile"
MODELS = ("qwen2.5:7b-instruct", "nomic-embed-text")


class Reset:
    """Compose's `!reset` tag: the attribute is removed from the merged model."""

    def __init__(self, value: Any) -> None:
        self.value = value


class ComposeLoader(yaml.SafeLoader):
    pass


def _reset(loader: yaml.SafeLoader, node: yaml.Node) -> Reset:
    if isinstance(node, yaml.MappingNode):
        return Reset(loader.construct_mapping(node))
    if isinstance(node, yaml.SequenceNode):
        return Reset(loader.construct_sequence(node))
    # The explicit tag hides the scalar's own type: resolve it as if untagged ('null' -> None).
    plain = yaml.ScalarNode(loader.resolve(yaml.ScalarNode, node.value, (True, False)), node.value)
    return Reset(loader.construct_object(plain))


ComposeLoader.add_constructor("!reset", _reset)

_VARIABLE = re.compile(r"\$(?:\$|\{(\w+)(?::?-([^}]*))?\}|(\w+))")


def interpolate(value: Any, env: dict[str, str] | None = None) -> Any:
    """Compose's interpolation, as far as these files use it: ${VAR}, ${VAR:-default}, $$ -> $."""
    env = env or {}
    if isinstance(value, str):

        def sub(m: re.Match[str]) -> str:
            if m.group(0) == "$$":
                return "$"
            name = m.group(1) or m.group(3)
            return env.get(name) or (m.group(2) or "")

        return _VARIABLE.sub(sub, value)
    if isinstance(value, dict):
        return {k: interpolate(v, env) for k, v in value.items()}
    if isinstance(value, list):
        return [interpolate(v, env) for v in value]
    if isinstance(value, Reset):
        return Reset(interpolate(value.value, env))
    return value


def load(path: Path) -> dict[str, Any]:
    return interpolate(yaml.load(path.read_text(encoding="utf-8"), Loader=ComposeLoader))


def without_tags(value: Any) -> Any:
    """The file as the schema sees it: a `!reset` tag carries a valid value that is then ignored."""
    if isinstance(value, Reset):
        return without_tags(value.value)
    if isinstance(value, dict):
        return {k: without_tags(v) for k, v in value.items()}
    if isinstance(value, list):
        return [without_tags(v) for v in value]
    return value


_REPLACED = {"command", "entrypoint", "test"}


def merge(base: Any, override: Any, key: str = "") -> Any:
    """Compose's merge rules for what these files need: mappings merge, sequences append (command,
    entrypoint and healthcheck test are replaced), scalars are replaced, `!reset` removes."""
    if isinstance(base, dict) and isinstance(override, dict):
        out = dict(base)
        for k, v in override.items():
            if isinstance(v, Reset):
                out.pop(k, None)
            elif k in out:
                out[k] = merge(out[k], v, k)
            else:
                out[k] = copy.deepcopy(v)
        return out
    if isinstance(base, list) and isinstance(override, list) and key not in _REPLACED:
        return base + override
    return copy.deepcopy(override)


# The schema names draft 7 ("https://json-schema.org/draft-07/schema", without the '#' that
# jsonschema looks the draft up by).
VALIDATOR = jsonschema.Draft7Validator(SCHEMA)


def validate(model: dict[str, Any]) -> None:
    VALIDATOR.validate(model)


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    return load(COMPOSE)


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, Any]:
    return compose["services"]


def gpu_devices(service: dict[str, Any]) -> list[dict[str, Any]]:
    return service.get("deploy", {}).get("resources", {}).get("reservations", {}).get("devices", [])


def depends(service: dict[str, Any]) -> dict[str, str]:
    return {name: spec["condition"] for name, spec in service.get("depends_on", {}).items()}


# --- the schema ---------------------------------------------------------------------------------


def test_schema_is_the_compose_specification() -> None:
    assert SCHEMA["$id"] == "compose_spec.json"
    assert SCHEMA["$schema"].startswith("https://json-schema.org/draft-07/")
    jsonschema.Draft7Validator.check_schema(SCHEMA)


def test_compose_file_is_valid(compose: dict[str, Any]) -> None:
    validate(compose)


def test_cpu_override_and_the_merged_model_are_valid(compose: dict[str, Any]) -> None:
    override = load(CPU_OVERRIDE)
    validate(without_tags(override))
    validate(merge(compose, override))


@pytest.mark.parametrize(
    "mistake, message",
    [
        (
            lambda c: c["services"]["ollama"]["deploy"]["resources"]["reservations"]["devices"][0].update(
                capabilities="gpu"
            ),
            "is not of type 'array'",
        ),
        (
            lambda c: c["services"]["app"]["depends_on"]["ollama"].update(condition="service_ready"),
            "is not valid under any of the given schemas",
        ),
        (
            lambda c: c["services"]["postgres"].update(healthcheck={"test": ["CMD", "pg_isready"], "every": "5s"}),
            "'every' does not match any of the regexes",
        ),
    ],
)
def test_the_schema_catches_mistakes(compose: dict[str, Any], mistake: Any, message: str) -> None:
    broken = copy.deepcopy(compose)
    mistake(broken)
    with pytest.raises(jsonschema.ValidationError, match=message):
        validate(broken)


# --- the services -------------------------------------------------------------------------------


def test_postgres_is_pgvector_17_with_a_named_volume_and_pg_isready(
    compose: dict[str, Any], services: dict[str, Any]
) -> None:
    pg = services["postgres"]
    assert pg["image"] == "pgvector/pgvector:pg17"
    volume, target = pg["volumes"][0].split(":")[:2]
    assert volume in compose["volumes"] and target == "/var/lib/postgresql/data"
    assert pg["healthcheck"]["test"][0] == "CMD-SHELL"
    assert shlex.split(pg["healthcheck"]["test"][1])[0] == "pg_isready"


def test_ollama_gets_every_nvidia_gpu_the_current_way(compose: dict[str, Any], services: dict[str, Any]) -> None:
    ollama = services["ollama"]
    assert ollama["image"].split(":")[0] == "ollama/ollama"
    assert gpu_devices(ollama) == [{"driver": "nvidia", "count": "all", "capabilities": ["gpu"]}]
    # Not the legacy ways (runtime: nvidia, or the v2 file format's `gpus`).
    assert "runtime" not in ollama and "gpus" not in ollama
    volume, target = ollama["volumes"][0].split(":")[:2]
    assert volume in compose["volumes"] and target == "/root/.ollama"


def test_ollama_healthcheck_needs_no_curl(services: dict[str, Any]) -> None:
    assert services["ollama"]["healthcheck"]["test"] == ["CMD", "ollama", "list"]


def test_models_are_pulled_once_ollama_is_healthy(services: dict[str, Any]) -> None:
    pull = services["ollama-pull"]
    assert pull["image"] == services["ollama"]["image"]
    assert depends(pull) == {"ollama": "service_healthy"}
    assert pull["environment"]["OLLAMA_HOST"] == "http://ollama:11434"
    assert pull["restart"] == "no"
    script = " ".join(pull["entrypoint"] + pull["command"])
    assert "set -e" in script
    for model in MODELS:
        assert model in script
    assert 'ollama pull "$model"' in script  # $$ in the file: a shell variable, not Compose's
    assert "ports" not in pull and not gpu_devices(pull)


def test_app_is_built_and_wired_to_postgres_and_ollama(services: dict[str, Any]) -> None:
    app = services["app"]
    assert app["build"] == {"context": ".", "dockerfile": "Dockerfile"}
    env = app["environment"]
    assert env["OLLAMA_HOST"] == "http://ollama:11434"
    pg_env = services["postgres"]["environment"]
    assert env["DATABASE_URL"] == (
        f"postgresql://{pg_env['POSTGRES_USER']}:{pg_env['POSTGRES_PASSWORD']}@postgres:5432/{pg_env['POSTGRES_DB']}"
    )
    assert env["RAG_CHAT_MODEL"] == f"ollama:{MODELS[0]}"
    assert "RAG_EMBEDDER" not in env  # auto: nomic-embed-text once pulled, and existing bases keep theirs
    assert app["ports"] == ["127.0.0.1:8501:8501"]  # this machine only: the app has no login
    assert app["init"] is True  # reaps children; Streamlit as PID 1 would leave zombies


def test_app_starts_after_the_others_are_healthy_and_the_models_pulled(services: dict[str, Any]) -> None:
    assert depends(services["app"]) == {
        "postgres": "service_healthy",
        "ollama": "service_healthy",
        "ollama-pull": "service_completed_successfully",
    }


def test_app_may_read_nvml_for_the_gpu_page(services: dict[str, Any]) -> None:
    app = services["app"]
    assert gpu_devices(app) == [{"driver": "nvidia", "count": "all", "capabilities": ["gpu", "utility"]}]
    assert app["environment"]["NVIDIA_DRIVER_CAPABILITIES"] == "utility"


def test_every_dependency_exists_waits_for_a_healthcheck_and_there_is_no_cycle(services: dict[str, Any]) -> None:
    for name, service in services.items():
        for other, condition in depends(service).items():
            assert other in services, f"{name} depends on unknown {other}"
            if condition == "service_healthy":
                assert "healthcheck" in services[other], f"{name} waits for {other}'s health, which has no check"

    def visit(name: str, path: tuple[str, ...]) -> None:
        assert name not in path, f"dependency cycle: {' -> '.join((*path, name))}"
        for other in depends(services[name]):
            visit(other, (*path, name))

    for name in services:
        visit(name, ())


# --- the CPU-only variant -----------------------------------------------------------------------


def test_cpu_variant_removes_every_gpu_reservation_and_nothing_else(compose: dict[str, Any]) -> None:
    merged = merge(compose, load(CPU_OVERRIDE))
    assert all(not gpu_devices(s) and "deploy" not in s for s in merged["services"].values())
    for name, service in compose["services"].items():
        expected = {k: v for k, v in service.items() if k != "deploy"}
        assert merged["services"][name] == expected
    assert merged["volumes"] == compose["volumes"]


# --- the Dockerfile -----------------------------------------------------------------------------


def instructions() -> list[tuple[str, str]]:
    text = DOCKERFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    out = []
    for line in text.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            word, _, rest = line.partition(" ")
            out.append((word.upper(), " ".join(rest.split())))
    return out


def stages() -> list[list[tuple[str, str]]]:
    """The Dockerfile's instructions split at each FROM."""
    out: list[list[tuple[str, str]]] = []
    for word, arg in instructions():
        if word == "FROM":
            out.append([])
        out[-1].append((word, arg))
    return out


def test_dockerfile_builds_in_one_stage_and_runs_slim_as_a_non_root_user() -> None:
    build, final = stages()
    assert build[0] == ("FROM", "python:3.11-slim AS build")
    assert final[0] == ("FROM", "python:3.11-slim")
    # llama-cpp-python compiles on install: the compiler lives in the build stage only.
    build_runs = " ".join(arg for word, arg in build if word == "RUN")
    assert "build-essential" in build_runs
    assert "pip install -r /tmp/requirements.txt" in build_runs
    assert ("COPY", "requirements.txt /tmp/requirements.txt") in build
    final_runs = " ".join(arg for word, arg in final if word == "RUN")
    assert "build-essential" not in final_runs and "pip install" not in final_runs
    assert ("COPY", "--from=build /opt/venv /opt/venv") in final
    assert any(word == "ENV" and "PATH=/opt/venv/bin:$PATH" in arg for word, arg in final)
    users = [arg for word, arg in final if word == "USER"]
    assert users and users[-1] not in ("root", "0")
    words = [word for word, _ in final]
    assert len(words) - 1 - words[::-1].index("USER") < words.index("CMD")
    assert ("EXPOSE", "8501") in final


def test_dockerfile_final_stage_has_the_libraries_llama_cpp_links_to() -> None:
    """The compiled llama.cpp links to OpenMP's runtime, which python:3.11-slim lacks."""
    import llama_cpp  # in requirements.txt: a missing or broken install fails here, it is not skipped

    libs = sorted((Path(llama_cpp.__file__).parent / "lib").glob("*.so"))
    assert libs, "llama_cpp ships no shared libraries"
    linked = subprocess.run(["ldd", *map(str, libs)], capture_output=True, text=True, check=True).stdout
    _, final = stages()
    final_runs = " ".join(arg for word, arg in final if word == "RUN")
    if "libgomp.so" in linked:
        assert "libgomp1" in final_runs
    # Scanned pages need Tesseract with both languages the OCR reads (rag.documents.ocr).
    assert all(pkg in final_runs for pkg in ("tesseract-ocr", "tesseract-ocr-eng", "tesseract-ocr-chi-sim"))


def test_dockerfile_healthcheck_asks_streamlit_with_python() -> None:
    (check,) = [arg for word, arg in instructions() if word == "HEALTHCHECK"]
    exec_form = json.loads(check[check.index("CMD") + 3 :])
    assert exec_form[:2] == ["python", "-c"]
    assert "http://localhost:8501/_stcore/health" in exec_form[2]
    assert "curl" not in check and "wget" not in check
    compile(exec_form[2], "healthcheck", "exec")


def test_dockerfile_runs_streamlit_on_every_interface() -> None:
    (cmd,) = [json.loads(arg) for word, arg in instructions() if word == "CMD"]
    assert cmd[:3] == ["streamlit", "run", "app.py"]
    assert cmd[cmd.index("--server.address") + 1] == "0.0.0.0"
    assert cmd[cmd.index("--server.port") + 1] == "8501"


def test_dockerignore_keeps_local_state_out_of_the_image() -> None:
    ignored = {
        line.strip()
        for line in (ROOT / ".dockerignore").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    }
    assert {".git", ".venv", ".rag-data", "**/__pycache__"} <= ignored
    assert "requirements.txt" not in ignored and "app.py" not in ignored
