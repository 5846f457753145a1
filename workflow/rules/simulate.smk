# Stage: simulate.
