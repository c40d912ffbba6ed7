"""``python -m hybrid.artifacts``: share trained model sets like prebuilt indexes (export, import, list).

Examples::

    python -m hybrid.artifacts list                                   # the sets of the store, by key
    python -m hybrid.artifacts export 3f2a --output ecbplus-models.tar  # one file: manifest, sha256s, provenance
    python -m hybrid.artifacts import ecbplus-models.tar              # on another machine: verified, then placed
    python -m hybrid.prepare hybrid-dense-net --index my-index --models 3f2a   # uses it instead of training

A set is named by its key (or a unique prefix of it) or by its folder. The store is ``$HYBRID_CACHE/models``
(default ``~/.cache/hybrid/models``) unless ``--store`` says otherwise. An import verifies every file's size and
sha256 against the pack's manifest before the set is placed; a damaged, altered or foreign file is refused with
one line and changes nothing.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from hybrid.cli.common import add_subparser, make_parser, output_file, run_cli
from hybrid.core.outputs import FILE, Input, Output, Writes
from hybrid.store.models import find_set, list_sets, store_root
from hybrid.store.pack import export_set, import_set


def parser() -> argparse.ArgumentParser:
    p = make_parser("python -m hybrid.artifacts", __doc__, epilog=True)
    sub = p.add_subparsers(dest="command", required=True)
    listing = add_subparser(sub, "list", help="the model sets of the store")
    listing.add_argument("--store", help="store folder (default: $HYBRID_CACHE/models)")
    listing.add_argument("--json", action="store_true")
    export = add_subparser(sub, "export", help="pack a model set into one file")
    export.add_argument("set", help="the set's key (or a unique prefix) or folder")
    export.add_argument("--output", required=True, type=output_file, help="the pack file to write (.tar)")
    export.add_argument("--store", help="store folder (default: $HYBRID_CACHE/models)")
    imported = add_subparser(sub, "import", help="verify a pack and place its set in the store")
    imported.add_argument("pack", help="a pack written by export")
    imported.add_argument("--store", help="store folder (default: $HYBRID_CACHE/models)")
    return p


def describe(model_set) -> dict:
    training = model_set.manifest.get("training") or {}
    return {"key": model_set.key, "name": model_set.name, "path": str(model_set.path),
            "trained_on": training.get("name"), "training_fingerprint": str(training.get("fingerprint", ""))[:16],
            "models": sorted(model_set.manifest.get("models") or {}), "created": model_set.manifest.get("created"),
            "code": model_set.manifest.get("code")}


def export_writes(output: str, model_set) -> Writes:
    """What ``export`` writes (the pack: a file, an earlier file replaced) and reads (the set's folder, which the
    pack may not lie inside nor replace), for the output policy (hybrid.core.outputs)."""
    return Writes("hybrid.artifacts export", [Output("--output", output, FILE, replace=True)],
                  [Input("the model set", model_set.path)])


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    root = Path(args.store) if args.store else store_root()
    if args.command == "list":
        sets = [describe(s) for s in list_sets(root)]
        if args.json:
            print(json.dumps(sets, indent=2))
        elif not sets:
            print(f"no model sets in {root} (python -m hybrid.prepare makes them, python -m hybrid.artifacts import "
                  "places them)")
        for entry in [] if args.json else sets:
            print(f"{entry['key']}  {entry['name']}  trained on {entry['trained_on']}  models: "
                  f"{', '.join(entry['models']) or '-'}  ({entry['created']})")
        return 0
    if args.command == "export":
        model_set = find_set(args.set, root)
        export_writes(args.output, model_set).check()
        manifest = export_set(model_set, args.output)
        print(json.dumps({"pack": args.output, "key": manifest["key"], "files": len(manifest["files"]),
                          "bytes": sum(f["bytes"] for f in manifest["files"].values())}))
        return 0
    model_set, new = import_set(args.pack, root)
    print(json.dumps({"imported": str(model_set.path), "key": model_set.key, "new": new}))
    return 0


if __name__ == "__main__":
    sys.exit(run_cli(main))
