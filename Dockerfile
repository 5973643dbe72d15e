# The runnable jar on a JRE. Built from this repository: docker build -t outbox-router .
FROM eclipse-temurin:17-jdk AS build
WORKDIR /src
COPY . .
RUN ./mvnw -B -q -pl outbox-router -am package -DskipTests

FROM eclipse-temurin:17-jre
COPY --from=build /src/outbox-router/target/outbox-router.jar /opt/outbox-router/outbox-router.jar
USER 10001
EXPOSE 8080
ENTRYPOINT ["java", "-jar", "/opt/outbox-router/outbox-router.jar"]
CMD ["--help"]
