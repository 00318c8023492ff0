"""check_export_spark.py - the dataset check_export_ranks.py exported (a torchrun
recording on the virtual device), queried by Spark in local mode (ctest label
"spark"; slow: a JVM starts): the same per-rank query gives the same peaks as
`memhist report --json` and DuckDB did (OUT/expected.json), and the steps
table read through Spark equals DuckDB's reading of it, so the cluster path
is the unchanged engine over the same files. Usage: check_export_spark.py OUT.
Exits 77 (skip) without pyspark or a Java runtime (scripts/setup.sh installs
both), or when check_export_ranks.py skipped (no dataset)."""
import json
import os
import shutil
import sys


def skip(why):
    print("skip: " + why)
    sys.exit(77)


def main():
    out = os.path.abspath(sys.argv[1])
    ds = os.path.join(out, "ds")
    if not os.path.exists(os.path.join(out, "expected.json")):
        skip("no dataset from check_export_ranks.py (it skipped or failed)")
    try:
        import duckdb
        from pyspark.sql import SparkSession
    except ImportError as e:
        skip("%s (scripts/setup.sh installs pyspark)" % e)
    if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
        skip("no Java runtime (scripts/setup.sh installs openjdk-17-jre-headless)")
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")  # loopback only
    want = {int(k): tuple(v) for k, v in json.load(open(os.path.join(out, "expected.json")))["ranks"].items()}
    spark = (SparkSession.builder.master("local[1]").appName("memhist-export-check")
             .config("spark.ui.enabled", "false").config("spark.driver.host", "127.0.0.1")
             .config("spark.driver.bindAddress", "127.0.0.1").config("spark.sql.shuffle.partitions", "2")
             .config("spark.driver.memory", "512m").getOrCreate())
    try:
        spark.read.parquet(os.path.join(ds, "events")).createOrReplaceTempView("events")
        spark.read.parquet(os.path.join(ds, "steps")).createOrReplaceTempView("steps")
        got = {r[0]: (r[1], r[2]) for r in spark.sql(
            "SELECT rank, max(allocated), max(reserved) FROM events GROUP BY rank").collect()}
        assert got == want, ("per-rank peaks", got, want)
        query = ("SELECT run, device, step, peak_allocated, peak_reserved, segments FROM steps "
                 "WHERE part = 'step' ORDER BY run, device, step")
        spark_steps = [tuple(r) for r in spark.sql(query).collect()]
    finally:
        spark.stop()
    con = duckdb.connect()
    con.execute("CREATE VIEW steps AS SELECT * FROM read_parquet('%s/steps/**/*.parquet', "
                "hive_partitioning = 1)" % ds)
    duck_steps = [tuple(r) for r in con.execute(query).fetchall()]
    assert spark_steps == duck_steps and len(spark_steps) >= 4, (spark_steps[:4], duck_steps[:4])
    print("ok: Spark's per-rank peaks %s, %d step rows as DuckDB's" % (got, len(spark_steps)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
