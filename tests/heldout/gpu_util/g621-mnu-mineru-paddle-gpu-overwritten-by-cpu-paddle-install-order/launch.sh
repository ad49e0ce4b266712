uv sync --extra=build
uv sync --extra=build --extra=compile
