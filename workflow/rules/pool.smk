# Stage: pool.
