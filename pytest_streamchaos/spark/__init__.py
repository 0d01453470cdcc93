"""Job side: launching jobs and the Kafka source/sink helpers a PySpark job uses."""
