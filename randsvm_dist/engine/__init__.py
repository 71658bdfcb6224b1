"""The Dask layer: finding or starting a client, bounded waits, partition handles, inputs."""
