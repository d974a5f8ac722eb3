"""Errors a user can act on. All are ValueErrors so callers can catch bad input in one place."""


class SpecCascadeError(ValueError):
    """Base class: the message names the problem and what to do about it."""


class SettingsError(SpecCascadeError):
    """A decoding setting is unknown or out of range."""


class PromptError(SpecCascadeError):
    """The prompt cannot be used (empty, too long, ids out of the vocabulary)."""


class ModelLoadError(SpecCascadeError):
    """A model or tokenizer could not be loaded."""


class TokenizerMismatchError(SpecCascadeError):
    """The drafter and verifier do not share a tokenizer, so their distributions cannot mix."""


class ModelRuntimeError(RuntimeError):
    """A model failed while running (an exception in a forward pass, NaN logits). The run
    stops; the loaded models and other requests are unaffected."""


class NonFiniteLogitsError(ModelRuntimeError, FloatingPointError):
    """A model produced NaN or infinite logits; nothing is sampled from them."""


class TraceFileError(SpecCascadeError):
    """A trace file cannot be opened: not JSON, too large, or not a speccascade trace. The
    message names the field and token index that failed and what was expected."""
