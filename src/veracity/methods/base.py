"""The Method protocol, a base class with the shared plumbing, and `load_method`.

A method turns a check input into a `Verdict`. `BaseMethod.check` does what every
method needs: it validates the input kind, runs the method inside a check context (so
every LLM call and search lands in the verdict's trace and usage), and turns faults that
survived their retries into a verdict with `error` set — never into a made-up label. A
retrieving method whose searches all failed abstains (`veracity.methods.failures`).
Configuration errors (unknown model, rejected API key) are not faults of one input and
are raised.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any, ClassVar, Protocol, runtime_checkable

from pydantic import ValidationError

from veracity.core import context, registry
from veracity.core.context import CheckContext
from veracity.core.errors import InputError, LabelError, MethodConfigError, problem_text
from veracity.core.events import Fault, Note, Stage, TraceEvent
from veracity.core.labels import LabelSpace, get_label_space
from veracity.core.limits import InputLimits
from veracity.core.paths import HomePaths
from veracity.core.types import CheckInput, Verdict
from veracity.evidence.claims import PROMPTS as CLAIM_PROMPTS
from veracity.evidence.claims import ClaimExtractor, ExtractionConfig
from veracity.llm.base import (
    LLM,
    CacheMiss,
    LLMRequestError,
    LLMServerError,
    LLMTransientError,
    StructuredOutputError,
)
from veracity.llm.client import ManagedLLM, ensure_managed

# the config bases live in their own module; methods keep importing them from here
from veracity.methods.config import ChoiceConfig as ChoiceConfig
from veracity.methods.config import MethodConfig
from veracity.methods.failures import weigh_search_failures
from veracity.methods.labelling import settle_probabilities
from veracity.methods.view import ViewPart
from veracity.prompting import PromptBundle, PromptError, using_prompts
from veracity.retrieval.base import Source, SourceAuthError, SourceError
from veracity.retrieval.defaults import SourceNeed
from veracity.retrieval.managed import ensure_managed_source

# Faults of one input that are recorded in its verdict instead of aborting a batch.
RECORDED_FAULTS: tuple[type[BaseException], ...] = (
    LLMTransientError,
    LLMServerError,
    LLMRequestError,
    StructuredOutputError,
    CacheMiss,
    SourceError,
    InputError,  # an input this method cannot use (e.g. replies without times to cut by)
)


ModelBuilder = Callable[[Mapping[str, Any]], LLM]
"""Builds a model from an ``llm:`` section (given to methods by `veracity.runtime`)."""


@dataclass(frozen=True)
class MethodParts:
    """Everything a method is built from, handed to its constructor at once
    (``Method(parts=...)``; `BaseMethod.parts_of` makes one from keywords).

    Attributes:
        llm: the run's model (wrapped once for accounting by the method).
        config: the method's options, already validated by its config class
            (`BaseMethod.options`; the spec's ``method_config``).
        labels: the label space the method answers in.
        sources: the run's sources by name (each wrapped once by the method).
        home: the home folder's paths (memory, checkpoints, indexes); None: not given.
        prompts: the run's prompt overrides (``prompts:``), checked against the
            method's templates when it is built.
        model_builder: builds a further model from an ``llm:`` section (S2MAD's scorer).
        state_dir: where the method keeps persistent state (an evaluation's ``state/``);
            None: the user-level folder under VERACITY_HOME.
        state_namespace: what that state belongs to (``dataset/split``).
        limits: inputs are cut to these before they are checked.
        notes: how the run was assembled (default sources chosen), traced per check.
        extras: collaborators only this method takes (its `extra_parts`).
    """

    llm: LLM
    config: MethodConfig
    labels: LabelSpace
    sources: Mapping[str, Source] = field(default_factory=dict)
    home: HomePaths | None = None
    prompts: PromptBundle = field(default_factory=PromptBundle)
    model_builder: ModelBuilder | None = None
    state_dir: Path | None = None
    state_namespace: str | None = None
    limits: InputLimits = field(default_factory=InputLimits)
    notes: tuple[str, ...] = ()
    extras: Mapping[str, Any] = field(default_factory=dict)


@runtime_checkable
class Method(Protocol):
    name: str
    label_space: LabelSpace

    async def check(self, item: CheckInput) -> Verdict: ...


class BaseMethod(ABC):
    """Shared plumbing for methods.

    Subclasses set `name`, `config_class`, `default_labels` (the label space it answers
    in unless the run names another; declared here only), `input_kinds`, implement
    `run(item, ctx)`, returning a Verdict (without usage and trace, which are filled in),
    and prepare what they need in `setup` (they never re-declare the constructor).
    """

    name: ClassVar[str]
    config_class: ClassVar[type[MethodConfig]] = MethodConfig
    default_labels: ClassVar[str] = "true_false"
    allowed_labels: ClassVar[tuple[str, ...] | None] = None  # None: any label space
    input_kinds: ClassVar[tuple[str, ...]] = ("claim", "article", "post")
    description: ClassVar[str] = ""

    # collaborators a method takes besides the bundle's common parts, by keyword (a
    # test's stand-ins, e.g. ToE's trained ``models``); they reach it as `parts.extras`
    extra_parts: ClassVar[tuple[str, ...]] = ()

    def __init__(
        self,
        llm: LLM | None = None,
        config: MethodConfig | Mapping[str, Any] | None = None,
        *,
        parts: MethodParts | None = None,
        **given: Any,
    ):
        """Build the method from its `parts` (what `veracity.runtime` passes), or from the
        same parts given as keywords (`parts_of`: tests and scripts); then `setup`.

        Raises:
            MethodConfigError: an invalid config or label space, no model, or what the
                method's `setup` refuses.
            PromptError: a prompt override the method's templates do not take.
        """
        if parts is None:
            parts = self.parts_of(llm, config, **given)
        elif llm is not None or config is not None or given:
            raise TypeError(f"{self.name}: give parts= alone, or the parts as keywords")
        if not isinstance(parts.config, self.config_class):
            raise MethodConfigError(
                f"{self.name}: its config is a {type(parts.config).__name__}, not a "
                f"{self.config_class.__name__} (pass a mapping to have it validated)"
            )
        if self.allowed_labels is not None and parts.labels.name not in self.allowed_labels:
            raise MethodConfigError(
                f"{self.name} works in {list(self.allowed_labels)}, not {parts.labels.name}"
            )
        if parts.llm is None:  # never built from the environment here: runtime passes the run's
            raise MethodConfigError(
                f"{self.name}: a method needs its model; pass llm= (veracity.runtime builds "
                "it from the run config; tests pass a scripted LLM from veracity.testing)"
            )
        package = self.prompt_package()
        if not package and parts.prompts.overrides:
            raise PromptError(f"{self.name} has no prompts package to override")
        self.parts = parts
        self.config = parts.config
        self.label_space = parts.labels
        self._llm = ensure_managed(parts.llm)
        self.home = parts.home  # the home folder's paths (memory, checkpoints); `home_paths`
        self.model_builder = parts.model_builder  # see `build_model`
        self._prompts = parts.prompts.bind(package) if package else PromptBundle()
        # the claim-extraction stage's overrides (a run's ``prompts.claims``), for the
        # methods and front ends that extract claims with this method's run
        self.claim_prompts = parts.prompts.claims(CLAIM_PROMPTS)
        self._prompt_hashes: dict[str, str] | None = None
        self.state_dir = parts.state_dir  # None: the user-level folder under VERACITY_HOME
        self.state_namespace = parts.state_namespace
        self.limits = parts.limits
        self.setup_notes = list(parts.notes)  # traced per check
        # Every source is wrapped once for retries, rule guards and search accounting.
        self.sources: dict[str, Source] = {
            name: ensure_managed_source(src) for name, src in parts.sources.items()
        }
        self.setup()

    def setup(self) -> None:  # noqa: B027  (a hook: nothing to prepare by default)
        """What a method prepares once its parts are in place (pick its sources, load its
        models, refuse a combination its config cannot run); called once, at the end of
        construction. Nothing by default; an override calls ``super().setup()`` first.

        Raises:
            MethodConfigError: the parts do not make a method that can run.
        """

    @classmethod
    def options(cls, given: MethodConfig | Mapping[str, Any] | None) -> MethodConfig:
        """`given` validated by this method's config class, defaults filled in (a config
        of the class already is: it is returned as it is). The one validation of a
        method's options: the spec (`veracity.runtime.spec`) and `parts_of` call it.

        Raises:
            MethodConfigError: a key the method does not take (its keys are listed, and
                a ``labels`` key is said to be the run's) or a bad value.
        """
        if isinstance(given, cls.config_class):
            return given
        if isinstance(given, MethodConfig):
            data = given.model_dump(exclude_unset=True)
        else:
            data = dict(given or {})
        try:
            return cls.config_class.model_validate(data)
        except ValidationError as exc:
            detail = problem_text(exc, unknown="unknown key (not one of this section's options)")
            if "labels" in data and "labels" not in cls.config_class.model_fields:
                detail += (
                    "; the label space is not a method option: give it as the run's "
                    "`labels:` (on the command line, --labels)"
                )
            elif any(e["type"] == "extra_forbidden" for e in exc.errors()):
                valid = ", ".join(sorted(cls.config_class.model_fields)) or "no options"
                detail += f" ({cls.name} takes: {valid})"
            raise MethodConfigError(f"{cls.name}: invalid method_config: {detail}") from None

    @classmethod
    def parts_of(
        cls,
        llm: LLM | None = None,
        config: MethodConfig | Mapping[str, Any] | None = None,
        *,
        labels: LabelSpace | str | None = None,
        sources: Mapping[str, Source] | None = None,
        home: HomePaths | None = None,
        prompts: PromptBundle | None = None,
        model_builder: ModelBuilder | None = None,
        state_dir: Path | None = None,
        state_namespace: str | None = None,
        limits: InputLimits | None = None,
        notes: Sequence[str] = (),
        **extras: Any,
    ) -> MethodParts:
        """The parts of this method from keywords (see `MethodParts`): `config` validated
        (`options`), `labels` named or given (None: `default_labels`), the rest defaulted.

        Raises:
            MethodConfigError: an invalid config or an unknown label space.
            TypeError: a keyword that names no part of this method (`extra_parts`).
        """
        unknown = sorted(set(extras) - set(cls.extra_parts))
        if unknown:
            raise TypeError(f"{cls.__name__} takes no part named {', '.join(unknown)}")
        if not isinstance(labels, LabelSpace):
            try:
                labels = get_label_space(labels or cls.default_labels)
            except LabelError as exc:
                raise MethodConfigError(f"{cls.name}: {exc}") from None
        return MethodParts(
            llm=llm,  # type: ignore[arg-type]  # None is refused by the constructor
            config=cls.options(config),
            labels=labels,
            sources=dict(sources or {}),
            home=home,
            prompts=prompts if prompts is not None else PromptBundle(),
            model_builder=model_builder,
            state_dir=state_dir,
            state_namespace=state_namespace,
            limits=limits if limits is not None else InputLimits(),
            notes=tuple(notes),
            extras=dict(extras),
        )

    def pick_source(self, name: str | None = None, *, missing: str | None = None) -> Source:
        """The source this method searches: the one called `name`, else the only one given.

        Args:
            name: the configured source name (None: the run's only source).
            missing: the error message when no source can be picked (default: one
                saying what to configure).

        Raises:
            MethodConfigError: `name` is not among the sources, or there is not exactly
                one source to default to.
        """
        known = ", ".join(sorted(self.sources)) or "none"
        if name is not None and name in self.sources:
            return self.sources[name]
        if name is None and len(self.sources) == 1:
            return next(iter(self.sources.values()))
        if missing is not None:
            raise MethodConfigError(missing)
        if name is not None:
            raise MethodConfigError(
                f"{self.name}: no source named {name!r} (sources: {known}); give it with "
                f"--source {name}=TYPE (see `veracity sources`; in a config file: `sources:`)"
            )
        if not self.sources:
            raise MethodConfigError(
                f"{self.name} needs a source to search: give one with --source NAME=TYPE, e.g. "
                "--source web=duckduckgo or --source web=local:INDEX (in a config file: `sources:`)"
            )
        raise MethodConfigError(
            f"{self.name} has several sources ({known}); choose one with --set source=NAME "
            "(in a config file: `method_config: {source: NAME}`)"
        )

    @classmethod
    def source_needs(cls, config: MethodConfig | Mapping[str, Any]) -> list[SourceNeed]:
        """The sources this method searches under `config` (its ``method_config``, given
        or validated), so a run that names none gets defaults (see
        `veracity.retrieval.defaults`); [] for methods that retrieve nothing. An invalid
        config also gives [] (building the method then reports it)."""
        return []

    @cached_property
    def retrieves(self) -> bool:
        """Whether this method searches for its evidence: it was given sources, or its
        config declares source needs (`source_needs`). A retrieving method whose searches
        all failed abstains instead of labelling (`veracity.methods.failures`)."""
        return bool(self.sources) or bool(type(self).source_needs(self.config))

    @classmethod
    def view_parts(cls, events: Sequence[TraceEvent], item: Mapping[str, Any]) -> list[ViewPart]:
        """This method's own panels in the web UI's report of a check (`ViewPart`s, after
        the evidence), read from the check's typed trace `events` and its input `item` as
        given (a dict: ``text``, ``replies``, ...); [] by default. The generic panels
        (debate, stop signals, trajectory, tree, searches) need nothing here."""
        return []

    @classmethod
    def parse_config(cls, config: MethodConfig | Mapping[str, Any]) -> MethodConfig | None:
        """`config` validated as this method's config (one of its class: as it is), or None
        when it is invalid."""
        try:
            return cls.options(config)
        except MethodConfigError:
            return None

    @classmethod
    def prompt_package(cls) -> str:
        """The package whose ``prompts/`` folder holds this method's templates."""
        return cls.__module__.rpartition(".")[0]

    def claim_extractor(self, config: ExtractionConfig, step: str) -> ClaimExtractor:
        """The shared claim-extraction stage on this method's model and with its run's
        ``prompts.claims`` overrides; its calls are tagged ``<method>:<step>``."""
        return ClaimExtractor(
            self.llm, config, tag=f"{self.name}:{step}", prompts=self.claim_prompts
        )

    def build_model(self, section: Mapping[str, Any], purpose: str) -> LLM:
        """A further model for `purpose` from an ``llm:`` section (the parts' `model_builder`).

        Raises:
            MethodConfigError: no model builder was given (a direct construction passes
                ``model_builder=``; `veracity.runtime` always does).
        """
        if self.model_builder is None:
            raise MethodConfigError(
                f"{self.name}: {purpose} names its own model, and this method was given no "
                "way to build one (model_builder=; veracity.runtime passes it)"
            )
        return self.model_builder(section)

    def prompt_hashes(self) -> dict[str, str]:
        """Template name -> hash of the text this method renders (overrides included);
        overridden claim-extraction templates as ``claims/<name>``."""
        if self._prompt_hashes is None:
            try:
                self._prompt_hashes = self._prompts.hashes()
            except (PromptError, ImportError):  # a method without a prompts folder
                self._prompt_hashes = {}
            if self.claim_prompts is not None:
                own = self.claim_prompts.hashes()
                for name, _ in self.claim_prompts.overrides:
                    self._prompt_hashes[f"claims/{name}"] = own[name]
        return self._prompt_hashes

    @property
    def llm(self) -> ManagedLLM:
        """The run's model (given at construction)."""
        return self._llm

    def home_paths(self, purpose: str) -> HomePaths:
        """The home folder's paths, for `purpose` (said in the error).

        Raises:
            MethodConfigError: the method was built without them (`veracity.runtime`
                always passes them; a direct construction passes ``home=``).
        """
        if self.home is None:
            raise MethodConfigError(
                f"{self.name}: {purpose} needs the home folder: pass home=HomePaths(...) "
                "(veracity.runtime passes the one of VERACITY_HOME)"
            )
        return self.home

    def verdict(self, **fields: Any) -> Verdict:
        """A Verdict pre-filled with this method's name and label space, its probabilities
        settled by the one rule for shown probabilities (`labelling.settle_probabilities`)."""
        fields.setdefault("label_space", self.label_space.name)
        fields.setdefault("method", self.name)
        return Verdict(**settle_probabilities(fields, self.label_space))

    async def check(self, item: CheckInput) -> Verdict:
        """Check one input. Faults of this input end up in `Verdict.error`."""
        if item.kind not in self.input_kinds:
            raise TypeError(
                f"{self.name} checks {', '.join(self.input_kinds)} inputs, not a {item.kind}"
            )
        ctx = CheckContext()
        window = self._llm.capabilities.context_window
        item, cuts = self.limits.apply(item, window)
        with context.check_context(ctx), using_prompts(self._prompts):
            ctx.emit(
                Stage(
                    name=self.name, step="start", input_kind=item.kind, prompts=self.prompt_hashes()
                )
            )
            for note in self.setup_notes:  # how the run was assembled (default sources)
                ctx.emit(Note(name="setup", text=note))
            if cuts:
                ctx.emit(Note(name="input_limits", detail={"cuts": [c.model_dump() for c in cuts]}))
            try:
                verdict = await self.run(item, ctx)
            except SourceAuthError:
                raise
            except RECORDED_FAULTS as exc:
                message = f"{type(exc).__name__}: {exc}"
                ctx.emit(Fault(name=self.name, error=message, fatal=True))
                verdict = self.verdict(label=None, error=message)
            verdict = weigh_search_failures(verdict, ctx, retrieves=self.retrieves)
            ctx.emit(Stage(name=self.name, step="end", label=verdict.label))
        if cuts:
            verdict.metadata["input_cuts"] = [c.model_dump() for c in cuts]
        verdict.usage = ctx.usage
        verdict.trace = ctx.trace
        return verdict

    @abstractmethod
    async def run(self, item: CheckInput, ctx: CheckContext) -> Verdict:
        """Produce the verdict for `item`."""


class OneSourceMethod(BaseMethod):
    """A method that searches one source, named by its config's ``source`` field (None:
    the only one it was given). Subclasses state what the searches are for."""

    search_purpose: ClassVar[str] = "searches"

    def setup(self) -> None:
        super().setup()
        self.source = self.pick_source(self.config.source)  # type: ignore[attr-defined]

    @classmethod
    def source_needs(cls, config: MethodConfig | Mapping[str, Any]) -> list[SourceNeed]:
        cfg = cls.parse_config(config)
        if not isinstance(cfg, cls.config_class):
            return []
        return [SourceNeed(cfg.source or "web", purpose=cls.search_purpose)]  # type: ignore[attr-defined]


def load_method(
    name: str,
    llm: LLM | None = None,
    config: MethodConfig | Mapping[str, Any] | None = None,
    **kwargs: Any,
) -> BaseMethod:
    """Instantiate a registered method by name."""
    cls = registry.methods.get(name)
    return cls(llm=llm, config=config, **kwargs)
