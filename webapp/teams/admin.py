from django.contrib import admin

from webapp.teams.models import Membership, Project


class MembershipInline(admin.TabularInline[Membership, Project]):
    model = Membership
    extra = 0
    autocomplete_fields = ("user",)


@admin.register(Project)
class ProjectAdmin(admin.ModelAdmin[Project]):
    list_display = ("name", "slug", "created_at")
    search_fields = ("name", "slug")
    inlines = (MembershipInline,)
