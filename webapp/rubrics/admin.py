from django.contrib import admin

from webapp.rubrics.models import Criterion, Rubric


class CriterionInline(admin.TabularInline[Criterion, Rubric]):
    model = Criterion
    extra = 0
    fields = ("position", "name", "scale", "min_value", "max_value", "weight", "scorer", "rule", "judge")


@admin.register(Rubric)
class RubricAdmin(admin.ModelAdmin[Rubric]):
    list_display = ("name", "project", "aggregation", "updated_at")
    list_filter = ("aggregation",)
    search_fields = ("name", "project__name")
    inlines = (CriterionInline,)
