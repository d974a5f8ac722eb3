"""i18n strings: key -> (English, Chinese)."""

STRINGS: dict[str, tuple[str, str]] = {}
