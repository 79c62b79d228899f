# gunicorn's configuration for flask_app.py: each worker writes its views' CPU time as it exits.
import flask_app


def worker_exit(server, worker):
    flask_app.write_truth()
