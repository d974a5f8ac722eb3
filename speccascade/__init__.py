"""speccascade: speculative cascades (Narasimhan et al., ICLR 2025) you can watch token by token."""

from .engine import METHODS, RoundEvent, Settings, generate, stream
from .errors import (
    ModelLoadError,
    ModelRuntimeError,
    NonFiniteLogitsError,
    PromptError,
    SettingsError,
    SpecCascadeError,
    TokenizerMismatchError,
)
from .models import ModelPair, load_pair
from .rules import RULES, SPEC_CASCADE_RULES, Rule
from .trace import RoundRecord, Summary, TokenRecord, Trace

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
