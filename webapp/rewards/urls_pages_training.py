"""Pages: urls_pages_training (joined into urls_pages.py, the ``rewards`` namespace): the training form and the job page."""

from django.urls import URLPattern, path

from webapp.rewards import training_views

urlpatterns: list[URLPattern] = [
    path("reward-models/<int:reward_model_id>/train/", training_views.train_form, name="train"),
    path("reward-jobs/<int:job_id>/", training_views.reward_job_page, name="reward-job"),
]
