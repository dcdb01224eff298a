"""Object-store settings given as Spark's Hadoop options, passed on as the environment.

``pyarrow.fs`` (the driver's and every executor's reads and writes) and boto3 (conditional
PUTs) read S3 settings from the ``AWS_*`` environment. Users of Spark write them as Hadoop
S3A options (``spark.hadoop.fs.s3a.endpoint``, ``...access.key``, ``...secret.key``);
:func:`apply_hadoop_options` sets the matching variables in this process before Spark
starts, so that the executors it launches inherit them. A variable already set to another
value is an error: two sources for one setting would leave one silently ignored.
"""

from __future__ import annotations

import os
from collections.abc import Mapping

from hudisql.errors import StorageLocationError

#: Hadoop S3A option (without ``spark.hadoop.``) -> the environment variable pyarrow reads.
S3A_ENVIRONMENT = {
    "fs.s3a.endpoint": "AWS_ENDPOINT_URL",
    "fs.s3a.access.key": "AWS_ACCESS_KEY_ID",
    "fs.s3a.secret.key": "AWS_SECRET_ACCESS_KEY",
    "fs.s3a.session.token": "AWS_SESSION_TOKEN",
    "fs.s3a.endpoint.region": "AWS_REGION",
}
_SSL = "fs.s3a.connection.ssl.enabled"
_HADOOP = "spark.hadoop."


def apply_hadoop_options(conf: Mapping[str, str]) -> list[str]:
    """Set the ``AWS_*`` variables the S3A options in ``conf`` stand for; returns the names
    of the variables set (never their values).

    Raises:
        StorageLocationError: a variable is already set to a different value.
    """
    hadoop = {k.removeprefix(_HADOOP): str(v) for k, v in conf.items()
              if k.startswith(_HADOOP)}
    applied = []
    for option, variable in S3A_ENVIRONMENT.items():
        value = hadoop.get(option)
        if value is None:
            continue
        if option == "fs.s3a.endpoint" and "://" not in value:
            secure = hadoop.get(_SSL, "true").strip().lower() != "false"
            value = ("https://" if secure else "http://") + value
        current = os.environ.get(variable)
        if current is not None and current != value:
            raise StorageLocationError(
                f"spark.hadoop.{option} and the environment variable {variable} disagree; "
                f"set one of them")
        os.environ[variable] = value
        applied.append(variable)
    return applied
