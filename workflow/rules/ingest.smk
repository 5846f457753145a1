# Stage: ingest. Rules are added by the ingest work (see issue tracker).
