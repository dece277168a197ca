"""`benchwh-dbt`: runs dbt so that it dies with the `benchwh` process that started it (issue #12).

A SIGKILL of a refresh used to leave dbt running as an orphan, still writing into build/ while
the next refresh cleaned that folder. This wrapper asks Linux to SIGKILL it when its parent dies
(prctl PR_SET_PDEATHSIG), records its pid beside the build file so that a
cleanup never deletes files a live dbt writes, then runs dbt's CLI in this process (same pid). It
runs dbt in the warehouse home ($BENCHWH_HOME): the dbt project's paths are relative to it
(dbt_project/profiles.yml), which keeps dbt's parse the same for every home.

In this process dbt keeps the result of the node a --fail-fast build failed on
(`keep_the_fail_fast_result`) and does not fail cancelling a connection already closed
(`cancel_closed_connections_quietly`), skips the events no logger writes (`skip_unlogged_dbt_events`) and
parses an event's message only when it is used (`build_event_messages_lazily`), gives statements
that fetch nothing an empty table without type inference, gives each node's context its macros
as they are first looked up rather than a generator for each of ~600 (`make_macros_on_first_use`),
writes no target/manifest.json in the orchestration's builds (`build_without_manifest_json`), writes
mashumaro's serializers when first called (`compile_serializers_lazily`), keeps the code Jinja
compiles dbt's templates to and the JSON schemas dbt validates its configuration against for the
next process (`cache_compiled_templates`, `cache_validation_schemas`, in `process_cache_dir()`),
and the garbage collector leaves the long-lived objects alone (cli/collector.py: dbt's imports and
its loaded project are frozen before the nodes run; the process ends without walking them again).
"""
from __future__ import annotations

import collections
import ctypes
import functools
import gc
import hashlib
import json
import os
import signal
import sys
import threading
from pathlib import Path

from cli.collector import exit_without_collecting
from ingest.files import write_quietly

PR_SET_PDEATHSIG = 1


def die_with_parent() -> None:
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except (OSError, AttributeError):
        return  # not Linux: the pid file below still keeps cleanup away from a live dbt
    expected = os.environ.get("BENCHWH_PARENT_PID")
    if expected and os.getppid() != int(expected):
        os._exit(137)  # the parent died before prctl took effect


def enter_home() -> None:
    """dagster-dbt starts dbt in the project folder: keep it as the project, run in the home (when
    there is one: a parse, as under `dagster dev` before any refresh, needs none)."""
    home = os.environ.get("BENCHWH_HOME")
    if home and os.path.isdir(home):
        os.environ.setdefault("DBT_PROJECT_DIR", os.getcwd())
        os.chdir(home)


def skip_unlogged_dbt_events() -> bool:
    """dbt builds every event as a protobuf message and formats it as a JSON line before its
    loggers' levels drop it: a build fires ~3,800 debug events (each SQL statement, connection and
    node step) that the info-level stdout log never shows, 10-15% of a small build's CPU. Skip
    an event below the level of every logger when no callback but dbt's own (which only reads
    warnings) would see it. A print event (`dbt show`'s table, `dbt compile`'s SQL) is never skipped:
    dbt's loggers write it at error level, so `--quiet` prints it even with no file log
    (DBT_LOG_LEVEL_FILE=none, as a build sets). Returns False, leaving dbt as it is, if dbt's event
    manager changed."""
    try:
        from dbt.tracking import track_behavior_change_warn
        from dbt_common.events.base_types import EventLevel
        from dbt_common.events.event_manager import EventManager
        from dbt_common.events.logger import PRINT_EVENT_NAMES, _log_level_map
    except ImportError:
        return False
    fire_event = EventManager.fire_event
    if getattr(fire_event, "skips_unlogged", False):
        return True
    warn = _log_level_map.get(EventLevel.WARN)
    if warn is None or not all(hasattr(EventManager(), a) for a in ("loggers", "callbacks")):
        return False

    def fire_logged_event(self, e, level=None, node=None, force_warn_or_error_handling=False):
        rank = _log_level_map.get(level or e.level_tag(), warn)  # an unknown level is always fired
        if (rank < warn and not force_warn_or_error_handling and type(e).__name__ not in PRINT_EVENT_NAMES
                and all(rank < _log_level_map.get(lg.level, 0) for lg in self.loggers)
                and all(cb is track_behavior_change_warn for cb in self.callbacks)):
            return None
        return fire_event(self, e, level, node, force_warn_or_error_handling)

    fire_logged_event.skips_unlogged = True
    EventManager.fire_event = fire_logged_event
    return True


def build_event_messages_lazily() -> bool:
    """dbt parses an event's fields into its protobuf message (`ParseDict`) when the event is
    made, before `fire_event` can skip it: a small build makes ~4,500 events and writes ~350; the
    other messages cost ~0.3 of its ~8 CPU-s. The event keeps its arguments, and dbt's own
    constructor runs on first use of the message (any field, `to_dict`, `message()`, ...), so a
    logged event is the same object it was. Returns False, leaving dbt as it is, if dbt's events
    changed."""
    try:
        from dbt_common.events.base_types import BaseEvent
    except ImportError:
        return False
    build_message = BaseEvent.__init__
    if getattr(build_message, "lazy", False):
        return True
    if not all(k in vars(BaseEvent) for k in ("__init__", "__getattr__", "__setattr__")):
        return False

    def keep_arguments(self, *args, **kwargs) -> None:
        object.__setattr__(self, "_message_arguments", (args, kwargs))

    def get(self, key):
        if key == "pb_msg":
            pending = self.__dict__.get("_message_arguments")
            if pending is None:
                raise AttributeError(key)
            build_message(self, *pending[0], **pending[1])  # sets pb_msg, with dbt's handling of bad fields
            self.__dict__.pop("_message_arguments", None)  # after: another thread may be building it too
            return object.__getattribute__(self, "pb_msg")
        return getattr(self.pb_msg, key)

    def set(self, key, value) -> None:
        if key == "pb_msg":
            object.__setattr__(self, key, value)
        else:
            setattr(self.pb_msg, key, value)

    keep_arguments.lazy = True
    BaseEvent.__init__, BaseEvent.__getattr__, BaseEvent.__setattr__ = keep_arguments, get, set
    return True


def empty_tables_without_type_inference() -> bool:
    """dbt gives each statement that fetches nothing `agate.Table(rows=[])`, and agate builds a
    type tester for the columns to infer (its date types set up a calendar parser): ~0.15 CPU-s
    for the ~220 such tables of a small build. With no columns there is nothing to infer: the same
    empty table (no rows, no column names, no column types) without the tester."""
    try:
        import agate
        from dbt_common.clients import agate_helper
    except ImportError:
        return False
    if not hasattr(agate_helper, "empty_table"):
        return False

    def empty_table():
        return agate.Table(rows=[], column_names=[], column_types=[])

    agate_helper.empty_table = empty_table
    return True


MANIFEST_JSON_SWITCH = "BENCHWH_DBT_MANIFEST_JSON"


def build_without_manifest_json() -> bool:
    """A `dbt build` writes target/manifest.json twice, after loading the project and again at
    its end (with semantic_manifest.json): ~0.5-1 CPU-s of a cold build of this project, whatever
    the scale (less in a warm worker, whose server wrote the serializers), for a file no build here reads (a refresh keeps only the target's partial_parse.msgpack:
    orchestration/dbt_state.py). With BENCHWH_DBT_MANIFEST_JSON=0 (the orchestration's builds,
    DBT_BUILD_ENV) a build does what writing it did to the loaded manifest (its parent, child and
    group maps, its tracking metadata) and skips the file; run_results.json is written as before.
    Read at each call: a warm server's workers get their environment after this patch. Any other
    command (`dbt parse`, `docs generate`) writes manifest.json as dbt does."""
    try:
        import dbt.parser.manifest as parser_manifest
        import dbt.task.runnable as runnable
        from dbt.flags import get_flags
    except ImportError:
        return False
    write_manifest = parser_manifest.write_manifest
    if getattr(write_manifest, "benchwh_switch", None) or getattr(runnable, "write_manifest", None) is not write_manifest:
        return False

    @functools.wraps(write_manifest)
    def write_manifest_unless_switched_off(manifest, target_path, which=None):
        if os.environ.get(MANIFEST_JSON_SWITCH) == "0" and getattr(get_flags(), "WHICH", None) == "build":
            manifest.build_parent_and_child_maps()
            manifest.build_group_map()
            manifest.fill_tracking_metadata()
            return None
        return write_manifest(manifest, target_path, which)

    write_manifest_unless_switched_off.benchwh_switch = True
    parser_manifest.write_manifest = runnable.write_manifest = write_manifest_unless_switched_off
    return True


def compile_serializers_lazily() -> bool:
    """mashumaro writes a dataclass's (de)serializers when the class is made unless its config
    says `lazy_compilation`; dbt's own classes say so, mashumaro's JSONSchema (which dbt builds
    its validation schemas with) does not: importing dbt wrote its orjson methods, ~0.25 CPU-s,
    and a build never calls them. Set by default before dbt is imported, each method is written
    on its first call, the same code."""
    try:
        from mashumaro.config import BaseConfig
    except ImportError:
        return False
    if not hasattr(BaseConfig, "lazy_compilation"):
        return False
    BaseConfig.lazy_compilation = True
    return True


class MacrosOnFirstUse(dict):
    """A dict of macro name -> dbt MacroGenerator that makes each generator when its name is first
    looked up (`in`, `[]`, `get`): dbt makes one for every macro (~600) in every context it builds
    (~480 a small build). Entries set as in any dict win over the pending macros, as later updates
    win in dbt's dict; anything that reads the whole dict (iteration, len, keys, items, copy,
    comparison) or removes from it makes every pending generator first, so it sees what dbt's dict
    would hold."""

    __slots__ = ("_pending", "_make")

    def __init__(self, pending: dict | None = None, make=None) -> None:
        super().__init__()
        self._pending = {} if pending is None else pending  # name -> Macro, shared: never changed
        self._make = make

    def __missing__(self, key):
        macro = self._pending.get(key)
        if macro is None:
            raise KeyError(key)
        generator = self._make(macro)
        dict.__setitem__(self, key, generator)
        return generator

    def __contains__(self, key) -> bool:
        return dict.__contains__(self, key) or key in self._pending

    def get(self, key, default=None):
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        return self[key] if key in self._pending else default

    def __bool__(self) -> bool:  # jinja asks (Context.get_all): without making anything
        return dict.__len__(self) > 0 or bool(self._pending)

    def make_all(self) -> None:
        # pending until all are in: a context can be read from two threads (dbt's query header)
        for key, macro in self._pending.items():
            if not dict.__contains__(self, key):
                dict.__setitem__(self, key, self._make(macro))
        self._pending = {}

    def take_macros(self, macros: dict, entries: dict, make) -> None:
        """Give this context dict `macros` (name -> Macro, pending, made by `make`) over what it
        holds, then `entries`, as dbt's ManifestContext.to_dict updates its builtins with the
        namespace."""
        for key in [k for k in dict.keys(self) if k in macros or k in entries]:
            dict.__delitem__(self, key)
        dict.update(self, entries)
        self._pending, self._make = macros, make

    def copy_keeping_pending(self) -> "MacrosOnFirstUse":
        """A copy whose pending macros stay pending (shared with this dict, made by the same maker)."""
        copy = MacrosOnFirstUse(self._pending, self._make)
        dict.update(copy, dict.items(self))
        return copy

    def names(self) -> set:
        return set(dict.keys(self)) | self._pending.keys()

    def __reduce_ex__(self, protocol):  # a copy or a pickle is a plain dict
        self.make_all()
        return (dict, (dict(dict.items(self)),))


def _every_macro_made_first(method):
    @functools.wraps(method)
    def all_made_first(self, *args, **kwargs):
        self.make_all()
        return method(self, *args, **kwargs)

    return all_made_first


for _name in ("__iter__", "__len__", "__reversed__", "__eq__", "__ne__", "__repr__", "__or__", "__ror__",
              "__delitem__", "keys", "values", "items", "copy", "pop", "popitem", "setdefault", "clear"):
    setattr(MacrosOnFirstUse, _name, _every_macro_made_first(getattr(dict, _name)))
del _name


class MacroPlan:
    """Which macros a context of one package sees under which names, worked out once from the
    manifest's macros by package: dbt's MacroNamespaceBuilder.add_macro and
    ManifestContext.to_dict, by name instead of by generator."""

    def __init__(self, by_package: dict, root: str, search: str, internal_order: list[str]) -> None:
        from dbt.include.global_project import PROJECT_NAME

        internal = set(internal_order)
        self.source, self.sizes = by_package, self.package_sizes(by_package)
        self.packages = {p: macros for p, macros in by_package.items() if p not in internal}
        self.local = self.packages.get(search, {})
        self.root = self.packages.get(root, {}) if root != search else {}
        self.project: dict = {}  # dbt's global project namespace: the internal packages, first wins
        for package in reversed(internal_order):
            if package in by_package:
                self.project.update(by_package[package])
        # a context's names, the last update winning: project macros, `dbt`, the packages, root, local
        self.namespaces = [p for p in self.packages if p not in self.root and p not in self.local]
        if PROJECT_NAME not in self.packages and PROJECT_NAME not in self.root and PROJECT_NAME not in self.local:
            self.namespaces.append(PROJECT_NAME)
        self.flat = {k: m for k, m in self.project.items() if k not in self.namespaces}
        self.flat.update(self.root)
        self.flat.update(self.local)
        self.project_name = PROJECT_NAME
        self.same_as_dbt: bool | None = None

    @staticmethod
    def package_sizes(by_package: dict) -> tuple:
        return tuple((p, len(macros)) for p, macros in by_package.items())

    def fits(self, by_package: dict) -> bool:
        return self.source is by_package and self.sizes == self.package_sizes(by_package)

    def namespace(self, context: dict, node, stack):
        """dbt's MacroNamespace for one context, its generators made on first use (one per macro)."""
        from dbt.clients.jinja import MacroGenerator
        from dbt.context.macros import MacroNamespace

        made: dict = {}

        def make(macro):
            generator = made.get(macro.unique_id)
            if generator is None:
                generator = made[macro.unique_id] = MacroGenerator(macro, context, node, stack)
            return generator

        namespace = MacroNamespace(
            global_namespace=MacrosOnFirstUse(self.root, make),
            local_namespace=MacrosOnFirstUse(self.local, make),
            global_project_namespace=MacrosOnFirstUse(self.project, make),
            packages={p: MacrosOnFirstUse(macros, make) for p, macros in self.packages.items()})
        namespace.macro_plan, namespace.make_macro = self, make
        return namespace

    def context_entries(self, namespace) -> dict:
        """The package namespaces a context holds by name (`dbt` is the global project's)."""
        return {p: namespace.global_project_namespace if p == self.project_name else namespace.packages[p]
                for p in self.namespaces}

    def matches(self, namespace, flattened: dict) -> bool:
        """Does dbt's own namespace (and its flattening into a context) give each name the
        same macro as this plan?"""
        def macros(generators: dict) -> dict:
            return {k: g.macro for k, g in generators.items()}

        def same(a: dict, b: dict) -> bool:
            return a.keys() == b.keys() and all(a[k] is b[k] for k in a)

        if not (same(macros(namespace.global_namespace), self.root) and same(macros(namespace.local_namespace), self.local)
                and same(macros(namespace.global_project_namespace), self.project)
                and namespace.packages.keys() == self.packages.keys()
                and all(same(macros(namespace.packages[p]), self.packages[p]) for p in self.packages)):
            return False
        entries = self.context_entries(namespace)
        if flattened.keys() != self.flat.keys() | entries.keys():
            return False
        return all(flattened[k] is entries[k] if k in entries else flattened[k].macro is self.flat[k] for k in flattened)


def render_with_macros_pending() -> bool:
    """Jinja's Template.new_context copies the context it renders with (`dict(globals, **vars)`),
    which would make every pending macro of a MacrosOnFirstUse (dbt renders node configs and test
    arguments so, a few times a node). Such a context is copied with its macros still pending;
    any other goes Jinja's way. Returns False, leaving Jinja as it is, if Jinja changed."""
    try:
        import jinja2.environment
    except ImportError:
        return False
    jinja_new_context = getattr(jinja2.environment, "new_context", None)
    if jinja_new_context is None:
        return False
    if getattr(jinja_new_context, "keeps_macros_pending", False):
        return True

    def others_of(globals, vars) -> list | None:
        """The mappings the template's globals add under `vars` (dbt's templates: a ChainMap of the
        context and the environment's globals), or None if they are not so."""
        if globals is None or globals is vars:
            return []
        if type(globals) is collections.ChainMap and globals.maps[0] is vars:
            others = globals.maps[1:]
            return others if all(type(m) is dict for m in others) else None
        return None

    @functools.wraps(jinja_new_context)
    def new_context(environment, template_name, blocks, vars=None, shared=False, globals=None, locals=None):
        others = others_of(globals, vars) if type(vars) is MacrosOnFirstUse and not shared and not locals else None
        if others is None:
            return jinja_new_context(environment, template_name, blocks, vars, shared, globals, locals)
        parent = vars.copy_keeping_pending()
        for mapping in others:  # under the context's own names
            for key, value in mapping.items():
                if key not in parent:
                    dict.__setitem__(parent, key, value)
        context = environment.context_class(environment, parent, template_name, blocks)
        if globals is not None:
            context.globals_keys = parent.names()
        return context

    new_context.keeps_macros_pending = True
    jinja2.environment.new_context = new_context
    return True


def make_macros_on_first_use() -> bool:
    """dbt builds every context (two a node, one each adapter macro call: ~480 a small build) with
    a MacroGenerator for each of the ~600 macros (dbt's own, the adapter's, the project's), of
    which a node calls a few dozen: about a fifth of the Python a build's nodes run. Here a context
    holds them as MacrosOnFirstUse, which makes a generator (the same one dbt makes) when its name
    is first looked up. Which names lead to which macros is worked out once per package
    (MacroPlan) and checked against dbt's own namespace the first time: where they differ, or for
    a namespace dbt builds another way (unit tests), dbt's way stays. Returns False, leaving dbt
    as it is, if dbt changed."""
    try:
        from dbt.context.macros import MacroNamespace, MacroNamespaceBuilder
        from dbt.context.manifest import ManifestContext
    except ImportError:
        return False
    if getattr(ManifestContext._build_namespace, "makes_macros_on_first_use", False):
        return True
    if not all(hasattr(MacroNamespaceBuilder, a) for a in ("build_namespace", "add_macro")):
        return False
    dbt_build_namespace, dbt_to_dict = ManifestContext._build_namespace, ManifestContext.to_dict
    plans: dict[tuple, MacroPlan] = {}  # two node threads may both make one: either serves

    def plan_for(builder, by_package) -> MacroPlan | None:
        key = (builder.root_package, builder.search_package, tuple(builder.internal_package_names_order))
        plan = plans.get(key)
        if plan is not None and plan.fits(by_package):
            return plan if plan.same_as_dbt else None
        plan = MacroPlan(by_package, *key[:2], list(key[2]))
        dbt_namespace = dbt_build_namespace_of(builder, by_package)  # checked against dbt's own
        plan.same_as_dbt = plan.matches(dbt_namespace, dict(dbt_namespace))  # as dbt's to_dict copies it
        plans[key] = plan
        return plan if plan.same_as_dbt else None

    def dbt_build_namespace_of(builder, by_package):
        fresh = MacroNamespaceBuilder(builder.root_package, builder.search_package, builder.thread_ctx,
                                      builder.internal_package_names_order, builder.node)
        return fresh.build_namespace(by_package, {})

    @functools.wraps(dbt_build_namespace)
    def build_namespace(self) -> MacroNamespace:
        builder = self._get_namespace_builder()
        by_package = self.manifest.get_macros_by_package()
        plan = plan_for(builder, by_package) if type(builder) is MacroNamespaceBuilder else None
        if plan is None:
            return builder.build_namespace(by_package, self._ctx)
        if type(self._ctx) is not MacrosOnFirstUse:
            context = MacrosOnFirstUse()
            dict.update(context, self._ctx)
            self._ctx = context
        return plan.namespace(self._ctx, builder.node, builder.thread_ctx)

    @functools.wraps(dbt_to_dict)
    def to_dict(self):
        plan = getattr(self.namespace, "macro_plan", None)
        if plan is None or type(self._ctx) is not MacrosOnFirstUse:
            return dbt_to_dict(self)
        context = super(ManifestContext, self).to_dict()
        context.take_macros(plan.flat, plan.context_entries(self.namespace), self.namespace.make_macro)
        return context

    if not render_with_macros_pending():
        return False
    build_namespace.makes_macros_on_first_use = True
    ManifestContext._build_namespace = build_namespace
    ManifestContext.to_dict = to_dict
    return True


def process_cache_dir() -> Path | None:
    """Where benchwh-dbt keeps what one dbt process works out and the next would work out the same,
    by content: $BENCHWH_DBT_CACHE, else the checkout's dbt target folder (git-ignored; `make clean`
    removes it). An empty BENCHWH_DBT_CACHE keeps nothing."""
    from ingest import config

    return config.cache_folder("BENCHWH_DBT_CACHE", config.dbt_project_dir() / "target" / "dbt-process-cache")


@functools.cache
def installed_versions(packages: tuple[str, ...]) -> tuple:
    """The installed versions of `packages` (None for one not installed) and Python's bytecode
    magic: part of each kept entry's key. Asked on first use, never at start-up (~4 ms a package)."""
    import importlib.metadata
    import importlib.util

    def version(package: str) -> str | None:
        try:
            return importlib.metadata.version(package)
        except importlib.metadata.PackageNotFoundError:
            return None

    return tuple(version(p) for p in packages) + (importlib.util.MAGIC_NUMBER.hex(),)


def _jinja_environment_key(env) -> str:
    """What a Jinja environment's parser and code generator depend on (its class, extensions and
    syntax); its filters, globals and `undefined` are looked up when the template runs."""
    cls = type(env)
    return repr((
        f"{cls.__module__}.{cls.__qualname__}", sorted(env.extensions),
        f"{env.code_generator_class.__module__}.{env.code_generator_class.__qualname__}",
        env.block_start_string, env.block_end_string, env.variable_start_string, env.variable_end_string,
        env.comment_start_string, env.comment_end_string, env.line_statement_prefix, env.line_comment_prefix,
        env.trim_blocks, env.lstrip_blocks, env.newline_sequence, env.keep_trailing_newline, env.optimized,
        env.is_async, env.autoescape if not callable(env.autoescape) else "callable", env.finalize is not None,
        sorted(getattr(env, "intercepted_binops", ())), sorted(getattr(env, "intercepted_unops", ())),
    ))


def cache_compiled_templates(folder: Path) -> bool:
    """dbt compiles each macro and node it renders from Jinja source to Python code in every
    process, a new environment each time (~500 templates, ~1.3 of a small build's ~17 CPU-s here):
    the same sources every build. Keep the code object (marshal, as Jinja's own bytecode cache
    does), keyed by the source, the template's name, the environment's syntax and the versions of
    Jinja, dbt-common and Python's bytecode. A template that fails to compile is never kept, and
    dbt's macro debugging (DBT_MACRO_DEBUGGING) compiles as before. Returns False, leaving Jinja
    as it is, if dbt's Jinja environment changed."""
    try:
        import marshal

        import jinja2
        from dbt_common.clients import jinja as dbt_jinja
    except ImportError:
        return False
    compile_source = jinja2.Environment.compile
    if getattr(compile_source, "keeps_code", False):
        return True
    if not hasattr(dbt_jinja, "MACRO_DEBUGGING"):
        return False

    @functools.wraps(compile_source)
    def compile_or_reuse(self, source, name=None, filename=None, raw=False, defer_init=False):
        if raw or not isinstance(source, str) or dbt_jinja.MACRO_DEBUGGING:
            return compile_source(self, source, name, filename, raw, defer_init)
        key = _jinja_environment_key(self)
        versions = installed_versions(("jinja2", "dbt-common"))
        digest = hashlib.sha256(repr((versions, key, name, filename, defer_init)).encode())
        digest.update(source.encode("utf-8", "surrogatepass"))
        path = folder / "templates" / f"{digest.hexdigest()}.code"
        try:
            return marshal.loads(path.read_bytes())
        except (OSError, ValueError, EOFError, TypeError):
            pass
        code = compile_source(self, source, name, filename, raw, defer_init)
        write_quietly(path, marshal.dumps(code))
        return code

    compile_or_reuse.keeps_code = True
    jinja2.Environment.compile = compile_or_reuse
    return True


def cache_validation_schemas(folder: Path) -> bool:
    """dbt validates the project, profile and credentials against JSON schemas it builds from its
    dataclasses with mashumaro in every process (11 classes, ~0.6 of a small build's ~17 CPU-s
    here): the same schemas for the same installed packages. Keep each as JSON, keyed by the class
    and the versions of Python and of the packages that define such classes or build their schemas
    (dbt-core, dbt-common, dbt-adapters, the two engines' adapters, mashumaro). Returns False,
    leaving dbt as it is, if dbt's `json_schema` changed."""
    try:
        from dbt_common.dataclass_schema import dbtClassMixin
    except ImportError:
        return False
    built = vars(dbtClassMixin).get("json_schema")
    if not isinstance(built, classmethod):
        return False
    if getattr(built.__func__, "keeps_schemas", False):
        return True
    build = built.__func__
    packages = ("dbt-core", "dbt-common", "dbt-adapters", "dbt-duckdb", "dbt-spark", "mashumaro")
    kept: dict[type, dict] = {}

    def json_schema(cls):
        schema = kept.get(cls)
        if schema is not None:
            return schema
        versions = installed_versions(packages) + (sys.version_info[:3],)
        digest = hashlib.sha256(repr((f"{cls.__module__}.{cls.__qualname__}", versions)).encode()).hexdigest()
        path = folder / "schemas" / f"{digest}.json"
        try:
            schema = json.loads(path.read_bytes())
        except (OSError, ValueError):
            schema = build(cls)
            write_quietly(path, json.dumps(schema, sort_keys=True).encode())
        kept[cls] = schema
        return schema

    json_schema.keeps_schemas = True
    dbtClassMixin.json_schema = classmethod(json_schema)
    return True


def restore_failed_result(results: list, failed) -> bool:
    """Put `failed` (the result dbt's FailFastError carries) in place of the 'skipped' mark dbt
    gave its node, or after the results when it has none. False when the result is there already."""
    from dbt.artifacts.schemas.results import RunStatus

    uid = failed.node.unique_id
    for i, result in enumerate(results):
        if getattr(getattr(result, "node", None), "unique_id", None) == uid:
            if result is failed or result.status != RunStatus.Skipped:
                return False
            results[i] = failed
            return True
    results.append(failed)
    return True


def with_fail_fast_result(execute_nodes):
    """`execute_nodes` of dbt's GraphRunnableTask, keeping the node a --fail-fast run failed on."""

    @functools.wraps(execute_nodes)  # also carries the markers of wrappers below it
    def execute_nodes_keeping_the_failure(self):
        from dbt.exceptions import FailFastError

        failures = _note_failing_results(self)
        try:
            results = execute_nodes(self)
        finally:
            vars(self).pop("call_runner", None)
        stop = getattr(self, "_raise_next_tick", None)
        if isinstance(stop, FailFastError):
            # the stop names the last node that failed, and nodes cancelled beside the first failure
            # fail too ("Interrupted!"): every failing result goes back, the first one first
            for result in [*failures, stop.result]:
                if getattr(result, "node", None) is not None:
                    restore_failed_result(self.node_results, result)
        return results

    execute_nodes_keeping_the_failure.keeps_fail_fast_result = True
    return execute_nodes_keeping_the_failure


def _note_failing_results(task) -> list:
    """A list `task`'s node threads append each failing result to as they return it (wraps the
    task's call_runner for this run, on the instance); empty if the task has no call_runner."""
    failures: list = []
    call_runner = getattr(task, "call_runner", None)
    if call_runner is None:
        return failures
    from dbt.contracts.results import NodeStatus

    failing = (NodeStatus.Error, NodeStatus.Fail, NodeStatus.PartialSuccess)  # as dbt's fail-fast reads them

    def call_runner_noting_failures(runner):
        result = call_runner(runner)
        if getattr(result, "status", None) in failing:
            failures.append(result)
        return result

    task.call_runner = call_runner_noting_failures
    return failures


def keep_the_fail_fast_result() -> bool:
    """dbt's --fail-fast can lose the result of the node that failed. The worker thread marks the
    run to stop before the thread pool's callback records that node's result; when the main thread
    stops first, dbt marks every node without a result as skipped, the failed one too. The run
    results then name no failure ("no failing node recorded") and the on-run-end hook that logs a
    failed test's rows (macros/log_failing_rows.sql) never sees it (seen once, in a fresh clone's
    `make test`). The failing result is put back: the one dbt's FailFastError carries, and every
    failing result a node's thread returned, since the stop cancels the nodes running beside the
    failure and the last of them to fail ("Interrupted!") replaces the failure in the stop (seen
    in CI under load). Returns False, leaving dbt as it is, if dbt's task changed."""
    return wrap_execute_nodes(with_fail_fast_result, "keeps_fail_fast_result")


def cancel_closed_connections_quietly() -> bool:
    """When a --fail-fast build's node fails, dbt cancels every other thread's open connection, and
    dbt-duckdb interrupts a cursor of each: one its thread had closed meanwhile (dbt still counts
    it open) raises "Connection already closed!". That error replaced the failure, so the build
    ended with no run results and the refresh could not name the failing model (seen in CI:
    tests/test_faults_dbt.py). A closed connection runs nothing, so there is nothing to cancel;
    any other error still raises. Returns False, leaving dbt-duckdb as it is, if it changed."""
    try:
        import duckdb
        from dbt.adapters.duckdb.environments.local import LocalEnvironment
    except ImportError:
        return False
    cancel = LocalEnvironment.__dict__.get("cancel")
    if not isinstance(cancel, classmethod):
        return False
    if hasattr(cancel.__func__, "dbt_duckdb_cancel"):  # installed already
        return True

    def cancel_unless_closed(cls, connection) -> None:
        try:
            cancel.__func__(cls, connection)
        except duckdb.ConnectionException as exc:
            if "closed" not in str(exc):
                raise

    cancel_unless_closed.dbt_duckdb_cancel = cancel
    LocalEnvironment.cancel = classmethod(cancel_unless_closed)
    return True


def with_loaded_project_frozen(execute_nodes):
    """`execute_nodes` of dbt's GraphRunnableTask, first freezing what the process holds then (its
    imports, the manifest, the graph): still one thread, and nothing of it is garbage before the
    process ends, so the full collections while nodes run walk only what the nodes make."""

    @functools.wraps(execute_nodes)
    def execute_nodes_after_freezing(self):
        gc.freeze()
        return execute_nodes(self)

    execute_nodes_after_freezing.freezes_loaded_project = True
    return execute_nodes_after_freezing


def freeze_the_loaded_project() -> bool:
    """Returns False, leaving dbt as it is, if dbt's task changed."""
    return wrap_execute_nodes(with_loaded_project_frozen, "freezes_loaded_project")


def wrap_execute_nodes(wrap, marker: str) -> bool:
    """GraphRunnableTask.execute_nodes = wrap(execute_nodes), once: `marker` is an attribute of
    the wrapper, which functools.wraps copies onto any wrapper above it. False if dbt has no such
    method."""
    try:
        from dbt.task.runnable import GraphRunnableTask
    except ImportError:
        return False
    execute_nodes = getattr(GraphRunnableTask, "execute_nodes", None)
    if execute_nodes is None:
        return False
    if not getattr(execute_nodes, marker, False):
        GraphRunnableTask.execute_nodes = wrap(execute_nodes)
    return True


def hand_out_nodes_as_threads_free() -> bool:
    """dbt's main loop hands every node whose parents are done to its thread pool at once, and the
    pool runs them first come, first served: the queue's priorities (dbt's: the graph generation)
    order only the nodes that became ready together. Here the loop takes a node from the queue
    only when a thread is free, and the queue puts first the node with the longest chain of nodes
    after it, so the chain a build waits on (LocalScore's samples, the speed facts, the summary,
    the site tables) starts as soon as its parents are done instead of after every seed's tests
    (a scale-1 build: LocalScore's samples started at 0.3 s instead of 1.0-1.5 s). The same nodes
    run, each after its parents and their tests. BENCHWH_DBT_CHAIN_FIRST=0 leaves dbt's order.
    Returns False, leaving dbt as it is, if dbt changed."""
    try:
        from dbt.graph.queue import GraphQueue
        from dbt.task.build import BuildTask
        from dbt.task.run import RunTask
        from dbt.task.runnable import GraphRunnableTask
    except ImportError:
        return False
    handlers = {cls: cls.__dict__.get("handle_job_queue") for cls in (GraphRunnableTask, RunTask, BuildTask)}
    if None in handlers.values() or not hasattr(GraphQueue, "_get_scores"):
        return False
    if getattr(GraphRunnableTask.run_queue, "hands_out_as_threads_free", False):
        return True
    run_queue, get_scores = GraphRunnableTask.run_queue, GraphQueue._get_scores

    def wanted() -> bool:
        return os.environ.get("BENCHWH_DBT_CHAIN_FIRST", "1").strip() != "0"

    def run_queue_as_threads_free(self, pool):
        if not wanted() or self.config.args.single_threaded:
            return run_queue(self, pool)
        free = threading.Semaphore(self.config.threads)
        apply_async = pool.apply_async

        def apply_async_then_free(func, args=(), kwds=None, callback=None, error_callback=None):
            # the thread counts as free once the callback has marked the node done, so that the
            # children it readies are in the queue when the loop takes the next node
            self._jobs_submitted += 1

            def job(*a, **k):
                try:
                    result = func(*a, **k)
                except BaseException:
                    free.release()  # no callback follows
                    raise
                if callback is None:
                    free.release()
                return result

            def callback_then_free(result):
                try:
                    callback(result)
                finally:
                    free.release()

            return apply_async(job, args, kwds or {}, callback_then_free if callback else None, error_callback)

        pool.apply_async = apply_async_then_free
        self._free_threads, self._jobs_submitted = free, 0
        try:
            return run_queue(self, pool)
        finally:
            del self._free_threads, self._jobs_submitted, pool.apply_async

    def with_a_free_thread(handle_job_queue):
        @functools.wraps(handle_job_queue)
        def handle_job_queue_with_a_free_thread(self, pool, callback):
            free = getattr(self, "_free_threads", None)
            if free is None or getattr(self, "_free_thread_taken", False):  # none, or a subclass's call
                return handle_job_queue(self, pool, callback)
            free.acquire()
            submitted, self._free_thread_taken = self._jobs_submitted, True
            try:
                handle_job_queue(self, pool, callback)
            finally:
                self._free_thread_taken = False
                if self._jobs_submitted == submitted:  # the node ran no job in the pool: its thread stays free
                    free.release()
        return handle_job_queue_with_a_free_thread

    def longest_chain_first(self, graph):
        if not wanted():
            return get_scores(self, graph)
        import networkx as nx

        after: dict = {}  # the longest chain of nodes from each node to the graph's end
        for node in reversed(list(nx.topological_sort(graph))):
            after[node] = 1 + max((after[child] for child in graph.successors(node)), default=0)
        return {node: -chain for node, chain in after.items()}  # lower runs first

    run_queue_as_threads_free.hands_out_as_threads_free = True
    GraphRunnableTask.run_queue = run_queue_as_threads_free
    for cls, handle_job_queue in handlers.items():
        cls.handle_job_queue = with_a_free_thread(handle_job_queue)
    GraphQueue._get_scores = longest_chain_first
    return True


def write_manifest_serializers(parse_state: Path) -> bool:
    """dbt has mashumaro write each (de)serializer of its classes on first call (lazy compilation):
    ~0.55 CPU-s of every dbt process goes to writing those that read the kept parse and write
    manifest.json. Read `parse_state` (a partial_parse.msgpack) and turn it into manifest.json's
    dict once, as a build does, so that a warm server's workers start with them written. Returns
    False, having changed nothing a run sees, if there is no such file or dbt changed."""
    try:
        from dbt.contracts.graph.manifest import Manifest
        from dbt.parser.manifest import extended_mashumuro_decoder

        manifest = Manifest.from_msgpack(parse_state.read_bytes(), decoder=extended_mashumuro_decoder)
        manifest.fill_tracking_metadata = lambda: None  # reads the command's flags: there are none yet
        manifest.writable_manifest().to_dict(omit_none=False, context={"artifact": True})
    except Exception:  # noqa: BLE001 - any failure only leaves the work to each run, as before
        return False
    return True


def prepare_dbt(cache: Path | None) -> None:
    """dbt imported and patched as every run here needs it (what the warm server holds,
    cli/dbt_server.py), then frozen out of the collector's walks."""
    compile_serializers_lazily()  # first: the other patches import dbt's modules
    skip_unlogged_dbt_events()
    build_event_messages_lazily()
    empty_tables_without_type_inference()
    make_macros_on_first_use()
    keep_the_fail_fast_result()
    cancel_closed_connections_quietly()
    freeze_the_loaded_project()
    build_without_manifest_json()
    hand_out_nodes_as_threads_free()
    if cache is not None:
        cache_compiled_templates(cache)
        cache_validation_schemas(cache)
    import dbt.cli.main  # noqa: F401

    gc.freeze()  # dbt's imports, before parsing the command line and loading the project


def run_dbt(cache: Path | None = None, prepared: bool = False) -> None:
    """dbt's CLI in this process (a warm server's worker has it prepared already); exits."""
    enter_home()
    build = os.environ.get("BENCHWH_BUILD_PATH")
    if build:
        pid_file = Path(build + ".pid")
        pid_file.parent.mkdir(parents=True, exist_ok=True)
        pid_file.write_text(f"{os.getpid()}\n")
    if not prepared:
        prepare_dbt(cache)
    from dbt.cli.main import cli

    sys.argv[0] = "dbt"
    try:
        cli()  # exits: click's standalone mode raises SystemExit with dbt's exit code
    except SystemExit as done:
        exit_without_collecting(done.code)


def main() -> None:
    die_with_parent()
    cache = process_cache_dir()  # a relative BENCHWH_DBT_CACHE names a folder from where dbt was started
    if cache is not None:
        from cli import dbt_server

        if dbt_server.wanted():
            status = dbt_server.run_in_warm_worker(cache, sys.argv[1:])
            if status is not None:
                sys.exit(status)
    run_dbt(cache)


if __name__ == "__main__":
    main()
