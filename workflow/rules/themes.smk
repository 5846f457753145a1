# Stage: themes.
