"""Publish a validated file squad atomically (contract §5).

The mechanics live in ``application.publication`` (one staging directory built and renamed into
place) and ``application.staging_sweep`` (what crashed builders left behind); this module
chooses the squad's id and values and retries with another id when a creator got there first.
"""

from __future__ import annotations

from collections.abc import Callable

from application.load_spec import CatalogLookup, load_validated_spec
from application.publication import (
    DIR_MODE,
    STAGING_LOCKS_DIR,
    CanonicalBytes,
    PublishedSquad,
    Publisher,
    os_reason,
    publish_failed,
    publish_once,
)
from application.staging_sweep import remove_abandoned_staging, remove_orphan_staging_locks
from domain.agents import AgentCatalog
from domain.errors import ErrorCode, PublishError
from domain.spec.model import SquadConfig
from domain.spec.parse import ValidatedSpec
from domain.squad.ids import (
    ROOT_ENTRIES,
    SQUAD_ID_PATTERN,
    base36,
    derive_squad_id,
    make_task_id,
    reserved_squad_id_problem,
    with_unique_suffix,
)
from domain.squad.layout import CANONICAL_DIR, CANONICAL_NAME
from domain.squad.model import AgentSetting, SpecRef, Squad, SquadStatus, Task, TaskStatus

# Re-exported: callers publish through this module and name its parts from here.
__all__ = [
    "RESERVED_SQUAD_IDS",
    "STAGING_LOCKS_DIR",
    "PublishedSquad",
    "Publisher",
    "create_squad",
    "publish_brief_squad",
    "publish_inline_squad",
    "remove_abandoned_staging",
    "remove_orphan_staging_locks",
]

# Names a squad must not take: the root's own entries (any case; Windows device names too, by
# ``domain.squad.ids.reserved_squad_id_problem``).
RESERVED_SQUAD_IDS = ROOT_ENTRIES
_MAX_ID_ATTEMPTS = 16


def create_squad(
    publisher: Publisher,
    catalog: AgentCatalog,
    *,
    spec_file: str,
    spec_sha256: str,
    cwd: str,
) -> PublishedSquad:
    """Validate ``spec_file`` against ``spec_sha256`` and publish it as a new squad."""
    spec_path, validated = load_validated_spec(
        publisher.fs, CatalogLookup(catalog), spec_file=spec_file, spec_sha256=spec_sha256, cwd=cwd
    )
    del spec_path  # the canonical copy, not the source, is what the squad refers to
    _prepare_root(publisher)
    base_id = derive_squad_id(validated.spec.goal, validated.sha256)
    return _publish_with_free_id(
        publisher,
        base_id,
        lambda squad_id: _squad_values(publisher, validated, squad_id, cwd=cwd),
        validated,
    )


def publish_brief_squad(
    publisher: Publisher,
    *,
    base_id: str,
    brief: CanonicalBytes,
    values: Callable[[str, str], tuple[Squad, tuple[Task, ...]]],
) -> PublishedSquad:
    """Publish a file squad whose canonical copy is ``brief`` (an attested flow's, which is no
    squad spec), the same atomic way; ``values(squad_id, canonical_path)`` gives its records."""
    _prepare_root(publisher)
    return _publish_with_free_id(
        publisher,
        base_id,
        lambda squad_id: values(squad_id, publisher.join(squad_id, CANONICAL_DIR, CANONICAL_NAME)),
        brief,
    )


def _prepare_root(publisher: Publisher) -> None:
    fs = publisher.fs
    try:
        fs.ensure_dir(publisher.squad_root, DIR_MODE)
    except OSError as exc:
        raise PublishError(
            ErrorCode.PUBLISH_FAILED, f"squad root {publisher.squad_root}: {os_reason(exc)}"
        ) from None
    try:
        remove_abandoned_staging(publisher)
        remove_orphan_staging_locks(publisher)
    except OSError as exc:
        raise publish_failed("listing the squad root", exc) from None


def _publish_with_free_id(
    publisher: Publisher,
    base_id: str,
    values: Callable[[str], tuple[Squad, tuple[Task, ...]]],
    validated: CanonicalBytes | None,
) -> PublishedSquad:
    now = publisher.clock.now()
    for attempt in range(_MAX_ID_ATTEMPTS):
        try:
            squad_id = _choose_id(
                publisher, base_id, now_ms=int(now.timestamp() * 1000), attempt=attempt
            )
        except OSError as exc:
            raise publish_failed("choosing a squad id", exc) from None
        squad, tasks = values(squad_id)
        published = publish_once(publisher, squad, tasks, validated)
        if published is not None:
            return published
    raise PublishError(
        ErrorCode.PUBLISH_FAILED,
        f"no free squad id after {_MAX_ID_ATTEMPTS} attempts (base '{base_id}')",
    )


def publish_inline_squad(
    publisher: Publisher,
    *,
    goal: str,
    tasks: tuple[Task, ...],
    agents: tuple[tuple[str, AgentSetting], ...],
    config: SquadConfig,
    cwd: str,
) -> PublishedSquad:
    """Publish a legacy inline squad (no spec, no reader, no attestation) the same atomic way."""
    _prepare_root(publisher)
    now = publisher.clock.now()
    slug = make_task_id(goal)
    base_id = (
        slug if slug and SQUAD_ID_PATTERN.match(slug) else f"squad-{publisher.ids.uuid4_hex()[:12]}"
    )

    def values(squad_id: str) -> tuple[Squad, tuple[Task, ...]]:
        squad = Squad(
            id=squad_id,
            goal=goal,
            status=SquadStatus.RUNNING,
            created=now,
            cwd=cwd,
            config=config,
            agents=agents,
            task_ids=tuple(task.id for task in tasks),
        )
        return squad, tasks

    return _publish_with_free_id(publisher, base_id, values, None)


def _choose_id(publisher: Publisher, base_id: str, *, now_ms: int, attempt: int) -> str:
    candidates = [base_id] if attempt == 0 else []
    candidates.append(with_unique_suffix(base_id, base36(now_ms)))
    candidates.append(
        with_unique_suffix(base_id, f"{base36(now_ms)}-{publisher.ids.uuid4_hex()[:6]}")
    )
    for candidate in candidates:
        if reserved_squad_id_problem(candidate) or not SQUAD_ID_PATTERN.match(candidate):
            continue
        if not publisher.fs.exists(publisher.join(candidate)):
            return candidate
    return with_unique_suffix(base_id, publisher.ids.uuid4_hex()[:12])


def _squad_values(
    publisher: Publisher, validated: ValidatedSpec, squad_id: str, *, cwd: str
) -> tuple[Squad, tuple[Task, ...]]:
    spec = validated.spec
    now = publisher.clock.now()
    canonical = publisher.join(squad_id, CANONICAL_DIR, CANONICAL_NAME)
    squad = Squad(
        id=squad_id,
        goal=spec.goal,
        status=SquadStatus.RUNNING,
        created=now,
        cwd=cwd,
        config=spec.config,
        agents=tuple(
            (agent.name, AgentSetting(model=agent.model, thinking=agent.thinking))
            for agent in spec.agents
        ),
        spec=SpecRef(
            sha256=validated.sha256,
            bytes=validated.byte_length,
            path=canonical,
            chunk_count=validated.chunks.chunk_count,
        ),
        task_ids=tuple(t.id for t in spec.tasks),
    )
    tasks = tuple(
        Task(
            id=t.id,
            title=t.title,
            description=t.description,
            agent=t.agent,
            status=TaskStatus.BLOCKED if t.depends else TaskStatus.PENDING,
            depends=t.depends,
            inherit_context=t.inherit_context,
            created=now,
        )
        for t in spec.tasks
    )
    return squad, tasks
