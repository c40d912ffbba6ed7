"""Named recipes: systems described as data (TOML), built into retrieval stages.

:mod:`hybrid.recipes.registry` reads and checks recipe files and keeps the registry of ``system.type``
builders; :mod:`hybrid.recipes.builders` registers one builder per stage the engine has. Importing this
package loads both, so every bundled recipe can be built, and registers the feature groups that wrap retrievers
(:mod:`hybrid.retrieval.providers`), so every feature set of an LTR reranker can be read.
"""

from hybrid.recipes import builders as builders  # noqa: F401  (registers the system types)
from hybrid.recipes import eventcoll as eventcoll  # noqa: F401  (registers the eventcoll type)
from hybrid.recipes.registry import (
    BUILDERS,
    RECIPE_DIR,
    Context,
    Recipe,
    RecipeSource,
    build_system,
    bundled_recipes,
    check_name,
    load_recipe,
    parse_recipe,
    register,
    topics_kind,
)
from hybrid.retrieval import providers as providers  # noqa: F401  (registers the retriever-backed feature groups)

__all__ = [
    "BUILDERS", "RECIPE_DIR", "Context", "Recipe", "RecipeSource", "build_system", "bundled_recipes", "check_name",
    "load_recipe", "parse_recipe", "register", "topics_kind",
]
