"""The "new annotation task" forms: a rubric task (a rubric, who annotates, the sampling rule), a pairwise
task (the pairing rule), and a pairwise task from a pairs file."""

from __future__ import annotations

from typing import Any

from django import forms
from django.contrib.auth.models import User

from webapp.annotation.pairing import MAX_PAIRS
from webapp.annotation.sampling import MAX_ITEMS, STRATEGIES
from webapp.annotation.services import MAX_ANNOTATORS_PER_ITEM
from webapp.rubrics.models import Rubric


class TaskFromRunForm(forms.Form):
    rubric = forms.ModelChoiceField(
        queryset=Rubric.objects.none(), help_text="Its criteria are what people score."
    )
    name = forms.CharField(max_length=200, required=False)
    instructions = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    strategy = forms.ChoiceField(
        choices=[(s, s) for s in STRATEGIES],
        initial="random",
        help_text="random: N at random (seeded); stratified: N spread over reward strata.",
    )
    n = forms.IntegerField(min_value=1, max_value=MAX_ITEMS, initial=20, label="Items (N)")
    seed = forms.IntegerField(initial=0)
    strata = forms.IntegerField(min_value=1, max_value=20, initial=4, help_text="Stratified only.")
    last_step_only = forms.BooleanField(required=False)
    only_incorrect = forms.BooleanField(required=False)
    annotators_per_item = forms.IntegerField(
        min_value=1, max_value=MAX_ANNOTATORS_PER_ITEM, initial=2, label="Annotators per item (k)"
    )
    annotators = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, help_text="None ticked: every eligible member."
    )

    def __init__(self, *args: Any, rubrics: list[Rubric], people: list[User], **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        rubric_field = self.fields["rubric"]
        assert isinstance(rubric_field, forms.ModelChoiceField)
        rubric_field.queryset = Rubric.objects.filter(pk__in=[r.pk for r in rubrics])
        annotators_field = self.fields["annotators"]
        assert isinstance(annotators_field, forms.MultipleChoiceField)
        annotators_field.choices = [(u.username, u.username) for u in people]

    def clean_annotators(self) -> list[str] | None:
        return self.cleaned_data["annotators"] or None

    def sampling(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {k: data[k] for k in ("strategy", "n", "seed", "strata", "last_step_only", "only_incorrect")}


class PairwiseTaskForm(forms.Form):
    """A pairwise preference task from a run's rollouts or an evaluation's samples (pairing.py's rule)."""

    name = forms.CharField(max_length=200, required=False)
    instructions = forms.CharField(required=False, widget=forms.Textarea(attrs={"rows": 3}))
    n = forms.IntegerField(min_value=1, max_value=MAX_PAIRS, initial=20, label="Pairs (N)")
    seed = forms.IntegerField(
        min_value=0, max_value=2**32 - 1, initial=0, help_text="Draws the pairs and their sides."
    )
    step = forms.IntegerField(
        min_value=0, required=False, help_text="A run's step (empty: the last step); evaluations have none."
    )
    only_differing_outcome = forms.BooleanField(
        required=False,
        label="Only pairs whose verdicts differ",
        help_text="One verified correct, the other not.",
    )
    annotators_per_item = forms.IntegerField(
        min_value=1, max_value=MAX_ANNOTATORS_PER_ITEM, initial=2, label="Annotators per item (k)"
    )
    annotators = forms.MultipleChoiceField(
        required=False, widget=forms.CheckboxSelectMultiple, help_text="None ticked: every eligible member."
    )

    def __init__(self, *args: Any, people: list[User], with_step: bool = True, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if not with_step:
            del self.fields["step"]
        annotators_field = self.fields["annotators"]
        assert isinstance(annotators_field, forms.MultipleChoiceField)
        annotators_field.choices = [(u.username, u.username) for u in people]

    def clean_annotators(self) -> list[str] | None:
        return self.cleaned_data["annotators"] or None

    def pairing(self) -> dict[str, Any]:
        data = self.cleaned_data
        return {k: data[k] for k in ("n", "seed", "step", "only_differing_outcome") if k in data}


class PairsFileForm(forms.Form):
    """The annotation list page's "pairwise task from a pairs file" form."""

    file = forms.FileField(
        help_text="JSONL: prompt, completion_a, completion_b (or chosen, rejected), optional answer."
    )
    name = forms.CharField(max_length=200, required=False)
    seed = forms.IntegerField(
        min_value=0, max_value=2**32 - 1, initial=0, help_text="Draws each row's sides."
    )
    annotators_per_item = forms.IntegerField(
        min_value=1, max_value=MAX_ANNOTATORS_PER_ITEM, initial=2, label="Annotators per item (k)"
    )
