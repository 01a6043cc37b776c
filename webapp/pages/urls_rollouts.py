"""The rollout browser: one page, the JSON rows its table reads and the rollout its token view draws."""

from django.urls import path

from webapp.pages import views_rollouts

urlpatterns = [
    path("runs/<int:run_id>/rollouts/", views_rollouts.rollout_browser, name="rollout-browser"),
    path("runs/<int:run_id>/rollouts/rows/", views_rollouts.rollout_browser_rows, name="rollout-rows"),
    path(
        "runs/<int:run_id>/rollouts/<int:rollout_id>/tokens/",
        views_rollouts.rollout_browser_tokens,
        name="rollout-tokens",
    ),
]
