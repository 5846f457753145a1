# Stage: figures.
