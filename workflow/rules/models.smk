# Stage: models.
