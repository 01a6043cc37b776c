"""The FastAPI app of the arithmetic environment: ``uvicorn server.app:app`` from this directory."""

from openenv.core.env_server.http_server import create_app

try:
    from ..models import ArithmeticAction, ArithmeticObservation
    from .arithmetic_environment import ArithmeticEnvironment
except ImportError:
    from models import ArithmeticAction, ArithmeticObservation

    from server.arithmetic_environment import ArithmeticEnvironment

app = create_app(
    ArithmeticEnvironment,
    ArithmeticAction,
    ArithmeticObservation,
    env_name="arithmetic",
    max_concurrent_envs=8,
)
