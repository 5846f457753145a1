# Stage: pauses.
