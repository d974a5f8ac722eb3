"""speccascade: speculative cascades (Narasimhan et al., ICLR 2025) you can watch token by token."""

from speccascade.core.engine import METHODS, RoundEvent, Settings, generate, stream
from speccascade.core.errors import (
    ModelLoadError,
    ModelRuntimeError,
    NonFiniteLogitsError,
    PromptError,
    SettingsError,
    SpecCascadeError,
    TokenizerMismatchError,
)
from speccascade.core.pair import ModelPair
from speccascade.core.rules import RULES, SPEC_CASCADE_RULES, Rule
from speccascade.core.trace import RoundRecord, Summary, TokenRecord, Trace
from speccascade.models.loading import load_pair

__version__ = "0.1.0"

__all__ = [
    "METHODS",
    "RULES",
    "SPEC_CASCADE_RULES",
    "ModelLoadError",
    "ModelRuntimeError",
    "NonFiniteLogitsError",
    "ModelPair",
    "PromptError",
    "RoundEvent",
    "RoundRecord",
    "Rule",
    "Settings",
    "SettingsError",
    "SpecCascadeError",
    "Summary",
    "TokenRecord",
    "TokenizerMismatchError",
    "Trace",
    "generate",
    "load_pair",
    "stream",
]
