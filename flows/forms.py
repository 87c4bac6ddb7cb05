"""Forms shared by the admin and the pages. Validation is the settings registry's, so the admin, the pages and
the API refuse the same values with the same messages."""
from __future__ import annotations

from typing import Any

from django import forms

from flows.models import Profile, ProviderConfig, SummarizerSettings
from flows.settings_registry import ASSISTANT, FIELDS_BY_NAME, SETTINGS_FIELDS, SettingsError, settings_validate
from summarizer.formats import FORMATS

__all__ = ["SummarizerSettingsForm", "ProviderConfigForm", "TranscriptUploadForm"]


class SummarizerSettingsForm(forms.ModelForm):
    class Meta:
        model = SummarizerSettings
        fields = ["profile", "flow", *[f.name for f in SETTINGS_FIELDS]]

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        for name, field in self.fields.items():
            spec = FIELDS_BY_NAME.get(name)
            if spec is not None and spec.unit:
                field.help_text = f"{field.help_text} [{spec.unit}]"
        if self.instance.pk:  # which profile/flow a row belongs to is fixed once created
            for name in ("profile", "flow"):
                self.fields[name].disabled = True
        if self.instance.pk and self.instance.profile == ASSISTANT:
            for name in ("use_qa", "summ_human_in_qa"):
                self.fields[name].disabled = True
                self.fields[name].help_text += " Fixed for the assistant."

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


FORMAT_LABELS = {"openai": "OpenAI chat JSON", "pentagi": "PentAGI msgchain JSON", "openclaw": "OpenClaw / pi JSONL"}


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
