"""Forms shared by the admin and the pages. Validation is the settings registry's, so the admin, the pages and
the API refuse the same values with the same messages."""
from __future__ import annotations

from typing import Any

from django import forms

from flows.config import SettingsError, compaction_provider_choices, parse_env_text, settings_validate
from flows.core import AGENT, ASSISTANT, FIELDS_BY_NAME, SETTINGS_FIELDS
from flows.engine import FORMATS, SettingSpec
from flows.models import Profile, ProviderConfig, SummarizerSettings

__all__ = ["SummarizerSettingsForm", "ProviderConfigForm", "EnvImportForm", "MAX_ENV_IMPORT_BYTES",
           "TranscriptUploadForm"]

MAX_ENV_IMPORT_BYTES = 64 * 1024  # a PentAGI .env is a few KB


class SummarizerSettingsForm(forms.ModelForm):
    class Meta:
        model = SummarizerSettings
        fields = ["profile", "flow", *[f.name for f in SETTINGS_FIELDS]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        profile = self.instance.profile if self.instance.pk else None
        for name, field in self.fields.items():
            spec = FIELDS_BY_NAME.get(name)
            if spec is not None:
                field.help_text = _help_for(spec, profile)
        provider = self.fields.get("compaction_provider")
        if provider is not None:  # installed providers by name; a stored unknown id stays selectable
            current = self.instance.compaction_provider if self.instance.pk else ""
            provider.widget = forms.Select(choices=[(c, c or "(built-in summary)")
                                                    for c in compaction_provider_choices(current)])
        if self.instance.pk:  # which profile/flow a row belongs to is fixed once created
            for name in ("profile", "flow"):
                self.fields[name].disabled = True
        if profile is not None:
            for spec in SETTINGS_FIELDS:
                if not spec.editable(profile) and spec.name in self.fields:
                    self.fields[spec.name].disabled = True
                    self.fields[spec.name].help_text += f" Fixed for the {profile}."

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        values = {f.name: cleaned[f.name] for f in SETTINGS_FIELDS if f.name in cleaned}
        profile = cleaned.get("profile") or self.instance.profile
        try:
            settings_validate(values, profile=profile)
        except SettingsError as exc:
            for name, message in exc.errors.items():
                self.add_error(name if name in self.fields else None, message)
        return cleaned


def _help_for(spec: SettingSpec, profile: str | None) -> str:
    """Help, unit and the variable of the row's profile (both profiles' variables on the add form)."""
    unit = f" [{spec.unit}]" if spec.unit else ""
    names = [spec.env[profile]] if profile else [spec.env[AGENT], spec.env[ASSISTANT]]
    variables = ", ".join(n for n in names if n)
    return f"{spec.help}{unit}" + (f" ({variables})" if variables else "")


class EnvImportForm(forms.Form):
    """A PentAGI `.env` to import into both profiles' defaults: pasted text or an uploaded file."""

    text = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 6, "spellcheck": "false"}),
                           max_length=MAX_ENV_IMPORT_BYTES, label=".env lines",
                           help_text="NAME=value lines; comments, blank lines and `export ` prefixes are fine.")
    file = forms.FileField(required=False, label="or a .env file")

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean()
        upload, text = cleaned.get("file"), cleaned.get("text") or ""
        if upload is not None:
            if upload.size > MAX_ENV_IMPORT_BYTES:
                raise forms.ValidationError(f"the file is larger than {MAX_ENV_IMPORT_BYTES // 1024} KB")
            try:
                text = upload.read().decode("utf-8")
            except UnicodeDecodeError:
                raise forms.ValidationError("the file is not UTF-8 text") from None
        if "\x00" in text:
            raise forms.ValidationError("the text contains NUL characters")
        cleaned["environ"] = parse_env_text(text)
        if not cleaned["environ"]:
            raise forms.ValidationError("no NAME=value lines to import")
        return cleaned


class ProviderConfigForm(forms.ModelForm):
    """The API key is write-only: never rendered back; leaving it blank keeps the stored key."""

    api_key = forms.CharField(required=False, widget=forms.PasswordInput(render_value=False),
                              help_text="Leave blank to keep the current key.")
    base_url = forms.URLField(required=False, assume_scheme="https",
                              help_text=ProviderConfig._meta.get_field("base_url").help_text)

    class Meta:
        model = ProviderConfig
        fields = "__all__"

    def clean_api_key(self) -> str:
        key = self.cleaned_data.get("api_key", "")
        return key if key else (self.instance.api_key if self.instance.pk else "")


FORMAT_LABELS = {"openai": "OpenAI chat JSON", "pentagi": "PentAGI msgchain JSON", "openclaw": "OpenClaw / pi JSONL",
                 "anthropic": "Anthropic Messages request JSON", "responses": "OpenAI Responses request JSON"}


class TranscriptUploadForm(forms.Form):
    """The flows list's upload: a transcript file becomes a new flow, at once or replayed live turn by turn."""

    file = forms.FileField(help_text="OpenAI chat JSON, PentAGI msgchain JSON or OpenClaw/pi JSONL.")
    format = forms.ChoiceField(choices=[("", "Detect from the file"), *[(f, FORMAT_LABELS.get(f, f)) for f in FORMATS]],
                               required=False)
    title = forms.CharField(max_length=200, required=False, help_text="Default: the file name.")
    profile = forms.ChoiceField(choices=Profile.choices, initial=Profile.AGENT,
                                help_text="Which summarizer settings apply (PentAGI's agent or assistant).")
    replay = forms.BooleanField(required=False, label="Replay it live",
                                help_text="Append it turn by turn and watch it being summarized, instead of at once.")
    speed = forms.FloatField(min_value=0.1, max_value=100, initial=2, required=False,
                             help_text="Turns per second when replaying (1 = one turn a second).")
