"""What the config names about a model and what every model loader raises: kept apart from the
loaders so `indexer.config` can check `[model] compute` without importing them (they import
config for the data dir)."""

COMPUTES = ("float", "int8")   # [model] compute: the packaged graph as shipped, or its int8-compute build
INT8_SPEC = "default:int8"     # the model spec (Config.model) of the packaged model's int8-compute graph


class ModelError(Exception):
    """The embedding model cannot be used; the message tells the user what to do."""
