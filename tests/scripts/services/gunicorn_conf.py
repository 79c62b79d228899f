# gunicorn's configuration for flask_app.py: each worker notes when it started, and writes its
# views' CPU time as it exits.
import flask_app


def post_fork(server, worker):
    flask_app.worker_started()


def worker_exit(server, worker):
    flask_app.write_truth()
