# Stage: ranking.
