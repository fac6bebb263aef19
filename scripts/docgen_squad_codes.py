"""What each squad and delegation error code means, for ``docs/reference/errors.md``.

The flow codes carry their cause and fix in ``domain.flows.catalogue``; these codes have no such
catalogue in the code, so their words live here, keyed by ``ErrorCode``. ``docgen_errors``
fails when a code has no entry or an entry names no code, so the page lists exactly the codes
the program can answer with.
"""

from __future__ import annotations

# code -> (meaning, typical causes and where raised, how to fix)
SQUAD: dict[str, tuple[str, str, str]] = {
    "SPEC_MALFORMED": (
        "The spec, or the `squad` call, is not acceptable JSON of the right shape.",
        "BOM, invalid UTF-8, duplicate key, trailing data, non-object top level, arrays/objects "
        "nested more than 32 levels deep (`domain/spec/parse.py`; the message gives the "
        "measured depth); schema violation: unknown/missing property, wrong type, bad pattern, "
        "`2.0` for an integer (`parse.check_spec_schema`); empty/NUL `specFile`, relative "
        "`--cwd` (`application/load_spec.py`); a `squad` call that mixes forms or breaks §2 "
        "(`application/squads/squad_call.py`); `pi-squad chunks` on non-UTF-8 "
        "(`entrypoints/cli.py`).",
        "Fix the file at the JSON path given; remove or rename unknown keys; use the file form "
        "or the inline form, not both.",
    ),
    "SPEC_HASH_MISMATCH": (
        "The digest is malformed or does not match the bytes.",
        "Uppercase hex, wrong length, trailing newline in the argument "
        "(`parse.check_sha256_argument`); file bytes hash differently (`parse.check_spec_hash`;"
        " the message names the digest you passed, never the file's).",
        "Re-run `sha256sum` on the exact file and pass the lowercase digest.",
    ),
    "SPEC_UNSTABLE": (
        "The spec file cannot be read safely.",
        "Missing file, final component is a symlink, not a regular file, changed while being "
        "read, unreadable (`load_spec.read_spec_file`).",
        "Pass the real file's path (not a symlink); check `--cwd` for relative paths; do not "
        "write the file while pi-squad reads it.",
    ),
    "SPEC_TOO_LARGE": (
        "A §4 limit is exceeded.",
        "File > 1 MiB (`parse.check_spec_size`); field, cumulative, count or Base64-run limits "
        "(`domain/spec/limits.py`).",
        "Move the text into artifacts; never trim content blindly.",
    ),
    "PLAN_INVALID": (
        "The task graph or roster is unusable.",
        "Duplicate task/artifact id, a reserved task id (`spec`, `session`, `knowledge`, or a "
        "Windows device name: `con`, `prn`, `aux`, `nul`, `com0`-`com9`, `lpt0`-`lpt9`, on "
        "every platform), unknown or self dependency, cycle, no dependency-free task, agent not "
        "in `agents`, agent missing or disabled, unknown `artifactRefs` "
        "(`domain/spec/plan.py`); inline `Plan rejected: ...` (`squad_call.inline_tasks`); "
        "`Failed to plan: ...` from the planner (`application/squads/planner.py`).",
        "Fix the tasks/agents named; add or enable the agent definition.",
    ),
    "ARTIFACT_PATH_INVALID": (
        "An artifact path is not a native absolute path.",
        "Relative, drive-relative, NUL (`domain/paths.py`).",
        "Use `realpath` output.",
    ),
    "ARTIFACT_MISSING": (
        "No file at the artifact path.",
        "`load_spec.verify_artifacts`.",
        "Restore the file or correct the path.",
    ),
    "ARTIFACT_UNSTABLE": (
        "The artifact cannot be read safely.",
        "Symlink as final component, not a regular file, changed while hashed, I/O error.",
        "Point at the real file; stop writers.",
    ),
    "ARTIFACT_SIZE_MISMATCH": (
        "Length differs from `bytes`.",
        "`verify_artifacts`, from the opened file's size before a byte is hashed (a huge file "
        "declared small is refused at once).",
        "Restore the file, or update `bytes` **and** `sha256` (`wc -c`, `sha256sum`).",
    ),
    "ARTIFACT_HASH_MISMATCH": (
        "SHA-256 differs from `sha256`.",
        "`verify_artifacts` (the message names the digest you declared, never the file's).",
        "Restore the file, or update `sha256`.",
    ),
    "PUBLISH_FAILED": (
        "Publication failed; nothing visible was left.",
        "Root not creatable/listable, a write/fsync/rename step failed, no free squad id or "
        "staging lock after several attempts, unsafe id (`application/squads/create_squad.py`,"
        " `application/publication.py`).",
        "Check permissions and disk space of `$PI_SQUAD_ROOT`; retrying is safe.",
    ),
    "SQUAD_NOT_FOUND": (
        "No such squad under the root.",
        "`adapters/store/files.py` (bad id shape, a reserved name such as `con` or `agents`, no "
        "`squad.json`), `status` with an empty root, `cancel` of an unknown id.",
        "Check the id (`pi-squad status`) and `PI_SQUAD_ROOT`.",
    ),
    "SQUAD_AMBIGUOUS": (
        "A shortened squad id is the prefix of more than one squad.",
        "Every command that takes a squad id accepts a unique prefix "
        "(`domain/squad/references.py`); the message lists the candidates, newest first.",
        "Give more of the id, or the whole id.",
    ),
    "SQUAD_BUSY": (
        "Another process is driving this squad.",
        "`application/squads/drive.py` (`.driver.lock` held).",
        "Follow it with `watch`/`status`, or stop the other driver first.",
    ),
    "USAGE": (
        "Bad command line: missing or unknown option, an option that does not apply to the "
        "action, a bad choice. Exit 2. Also a `squad_status` tool input that breaks its schema.",
        "`entrypoints/cli.py` (`_Parser.error`); `application/tool_calls.py`.",
        "See `pi-squad <cmd> --help`.",
    ),
    "TASK_NOT_FOUND": (
        "The task id is not in the squad.",
        "`operations` (task actions, `forkFromTask`), `mailbox`.",
        "Use one of the ids the message lists.",
    ),
    "TASK_EXISTS": (
        "`add_task` with an id already used.",
        "`operations.add_task`.",
        "Choose a new id.",
    ),
    "TASK_INPUT_INVALID": (
        "The request's task input is incomplete or wrong.",
        "Missing `taskId`/`task`/`depends`; empty title or agent; title/description over the "
        "§4 limits in a file squad; `forkFromTask` with `inheritContext` (`operations`); "
        "`--task-json` or `squad_modify`'s input not a strict JSON object, unknown key, wrong "
        "type (`new-task.schema.json` through `domain/inputs.parse_input`).",
        "Supply or correct the field; put long text in a file the task names.",
    ),
    "INVALID_TASK_ID": (
        "A new task id is not allowed.",
        "`operations._check_new_task_id`: pattern (file squads: spec task-id pattern; inline: "
        "`^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$`) or reserved: `spec`/`session`/`knowledge` in "
        "any case, or a Windows device name (`con`, `nul`, `com1`, `lpt1` ..., also with an "
        "extension such as `con.txt`) on every platform (`domain/squad/ids.py`).",
        "Use a lowercase, hyphenated id.",
    ),
    "DEPENDENCY_INVALID": (
        "A dependency list names a task twice, the task itself, or unknown tasks.",
        "`operations._check_dependencies`.",
        "Fix the list.",
    ),
    "DEPENDENCY_CYCLE": (
        "`set_dependencies` would create a cycle (shown).",
        "`operations.set_dependencies`.",
        "Remove one edge of the cycle.",
    ),
    "AGENT_UNAVAILABLE": (
        "`add_task` names a missing or disabled agent.",
        "`operations._check_agent` (lists enabled agents).",
        "Use an enabled agent or add a definition.",
    ),
    "OPERATION_REFUSED": (
        "The request is not allowed in the current state.",
        "`operations` (set_dependencies on in_progress/done, cancel_task with live dependents, "
        "pause_task on cancelled/done, complete_task on cancelled, pause of a review/done "
        "squad, cancel of a done squad or without id, fork source without session); `review` "
        "(squad not in review, review already recorded); `report --out` not writable; `watch` "
        "cannot read; `run` without spec or `--squad`; `demo` outside a checkout.",
        "Follow the advice in the message (e.g. resume first, add rework).",
    ),
    "RUNTIME_UNAVAILABLE": (
        "No usable Pi 0.80.10 / Node, or the Pi package is missing.",
        "`entrypoints/children.py`, `extension-path`.",
        "`make runtime` (or set `PI_SQUAD_RUNTIME_DIR`); `uv sync`.",
    ),
    "ATTESTATION_INVALID": (
        "A completion needs a valid spec-read attestation and it is missing or invalid.",
        "`complete_task` (nothing changed); `review` (work reopened).",
        "Let the task read the spec (resume it); check with `pi-squad verify`.",
    ),
    "REVIEW_INVALID": (
        "The verdict or evidence is not acceptable.",
        "`application/squads/review.py`.",
        "Give all evidence fields; add `--issue` for fail/pass_with_issues.",
    ),
    "MESSAGE_INVALID": (
        "A message is empty, or a message id/sender has a bad shape or is unknown.",
        "`application/squads/mailbox.py`; `squad_message`'s input schema.",
        "Send non-whitespace text.",
    ),
    "SQUAD_INTEGRITY": (
        "A task the squad pinned (`squad.json` `taskIds`, or a task of the canonical spec) has "
        "a missing ledger directory, a missing or unreadable `.records/<task>/task.json`, or a "
        "record naming another task. The squad is quarantined: children stop, nothing is "
        "accepted.",
        "`adapters/store/files.py` on every load; the scheduler's integrity pass (also for "
        "spec tasks missing from `taskIds`).",
        "Restore the records from a backup (`pi-squad verify SQUAD` names what is wrong), or "
        "abandon the squad. A pinned `task.json` that is truncated or not a task record is "
        "this error too.",
    ),
    "ISOLATION_UNAVAILABLE": (
        "Child write isolation was required but cannot be enforced here (not Linux, kernel "
        "without Landlock ABI >= 3, or `PI_SQUAD_ISOLATION=none`), or only at a level where a "
        "child could signal its siblings (Landlock below ABI 6 without bubblewrap's "
        "namespaces).",
        "`pi-squad run --require-isolation` / `PI_SQUAD_REQUIRE_ISOLATION=1` before anything is"
        " published; the scheduler before a spawn; `ChildIsolation.confine` "
        "(`adapters/isolation/landlock.py`).",
        "Run on Linux >= 6.2 with Landlock enabled (>= 6.12, or install bubblewrap, for "
        "signals), or unset `PI_SQUAD_REQUIRE_ISOLATION`.",
    ),
    "ISOLATION_UNSAFE": (
        "A confined child's write grants would contain the squad root (its project directory "
        "or temporary directory holds the root), reach inside it beyond the task's own "
        "directory, or hold code that runs outside the child's control (pi-squad, its Python, "
        "the Pi runtime, the bridge).",
        "`adapters/isolation/confinement.py` before the child starts (the task fails with "
        "`Spawn failed: ...`); `pi-squad run` checks the project before anything is published.",
        "Keep `PI_SQUAD_ROOT` outside the squad's working directory, e.g. `export "
        "PI_SQUAD_ROOT=$HOME/.pi/squad`; install pi-squad outside the project (`uv tool "
        "install`), move a project `.venv` out, keep the Pi runtime elsewhere "
        "(`PI_SQUAD_RUNTIME_DIR`).",
    ),
    "RECORD_CORRUPT": (
        "A squad's own record (`squad.json`, a `mailbox.json`; an `observed.jsonl` line is "
        "skipped instead) is truncated, empty, not strict JSON, or not the record's shape (a "
        "`squad.json` without `taskIds` too). The message names the file and what is wrong; "
        "nothing is changed. `status` and `watch` without a squad id, when no squad is "
        'readable, name the unreadable squad and its file rather than say "no squads". A '
        "delegation session state that does not decode is this error too.",
        "`adapters/store/json_records.py` (`CorruptRecord`), raised by the store "
        "(`adapters/store/files.py`). A torn last line of `messages.jsonl` is not an error: it "
        "is skipped, and the next append starts a new line.",
        "pi-squad writes records atomically, so something else changed the file: restore it "
        "from a backup, or remove the squad's directory and create the squad again.",
    ),
    "IO_FAILED": (
        "The operating system refused a file operation (permission denied, disk full, "
        "read-only file system); nothing was half-written.",
        "Any command (`entrypoints/output.run_reporting`). Inside a confined squad child, squad"
        " records are read-only by design.",
        "Check permissions and free space of `$PI_SQUAD_ROOT`.",
    ),
}

# code -> when the `delegate` host refuses with it
DELEGATION: dict[str, str] = {
    "DELEGATE_INVALID": (
        "not an object; unknown `op`; the op's schema (unknown field, type, bound); duplicate "
        "job keys or requirement ids; a job naming a requirement not in the set; a finding "
        "decided twice or not at all; a CLI request whose `op` is not the subcommand's, "
        "unreadable or not JSON; a bad `--session`"
    ),
    "DELEGATE_VERSION_UNSUPPORTED": "`version` is not the integer 1",
    "DELEGATE_FORGED_FIELD": "a host-owned field in a request or job proposal",
    "DELEGATE_POLICY_DENIED": (
        "a mode not granted; more jobs than a batch may have; a limit above the grant; "
        "recursive delegation"
    ),
    "DELEGATE_CAPACITY_EXHAUSTED": (
        "the batch or session request allowance, batch count, source count, observation count "
        "(256) or idempotency keys exhausted; a job's one follow-up used; a job's requests used "
        "or deadline passed"
    ),
    "DELEGATE_SOURCE_UNKNOWN": (
        "a source ID capture did not issue in this session (in a job, a follow-up or a parent "
        "observation); a receipt ID the host did not issue in this session (a job's "
        "`receiptIds`)"
    ),
    "DELEGATE_SOURCE_REFUSED": (
        "a capture outside the granted roots, through a symlinked directory, of a symlink, a "
        "private store, binary or non-UTF-8 content, too large, missing or unstable"
    ),
    "DELEGATE_NOT_FOUND": "a batch or job not in the session",
    "DELEGATE_STATE_REFUSED": (
        "follow-up from a state or outcome that does not allow it, before settlement, or on a "
        "cancelled batch; resolve of a state that cannot be resolved; accept of a non-ready "
        "result, with an uncovered requirement or an open finding"
    ),
    "DELEGATE_BINDING_STALE": (
        "attempt, packet digest, result revision or task generation not the job's current "
        "result; a follow-up after a policy change"
    ),
    "DELEGATE_EVIDENCE_UNKNOWN": (
        "a `resolve` finding decision cites an evidence ID that is not in the job's evidence "
        "table (the result's evidence entries and the receipts granted to the job)"
    ),
    "DELEGATE_IDEMPOTENCY_CONFLICT": "a key reused with a different request",
    "DELEGATE_CURSOR_INVALID": "`afterCursor` beyond the batch's collection cursor",
    "DELEGATE_POLICY_INVALID": "a policy file that is not strict JSON or not `delegate-policy-v1`",
    "DELEGATE_GRANT_CHANGED": (
        "a request (run, follow-up, resolve, cancel, capture, work) under another grant than the "
        "session's (other `--grant-root`/`--allowance` flags, an edited policy file): the message "
        "names both and `pi-squad delegate renew`, the one command that adopts a new grant"
    ),
}
