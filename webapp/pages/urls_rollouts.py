urlpatterns: list = []  # type: ignore[type-arg]
