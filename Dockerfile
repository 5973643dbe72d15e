# The runnable jar on a JRE, in the layout of the release image that ./mvnw -Pimage package builds without Docker
# (README, "Build a release"). Built from this repository: docker build -t outbox-router .
FROM eclipse-temurin:17-jdk AS build
WORKDIR /src
COPY . .
RUN ./mvnw -B -q -pl outbox-router -am package -DskipTests

FROM eclipse-temurin:17-jre
COPY --from=build /src/outbox-router/target/outbox-router.jar /opt/outbox-router/outbox-router.jar
# The JVM options of the README (docs/operations.md says why): serial collector, a 128 MB heap of which 80 MB for new
# objects, exit when it runs out. Set JAVA_TOOL_OPTIONS to replace them.
ENV JAVA_TOOL_OPTIONS="-XX:+UseSerialGC -Xmx128m -Xmn80m -XX:+ExitOnOutOfMemoryError"
USER 10001:10001
WORKDIR /opt/outbox-router
EXPOSE 8080
ENTRYPOINT ["java", "-jar", "/opt/outbox-router/outbox-router.jar"]
CMD ["--help"]
